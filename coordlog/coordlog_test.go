package coordlog

import (
	"testing"

	"github.com/sluice/sluice/engine"
	_ "github.com/sluice/sluice/engine/memlog"
	"github.com/sluice/sluice/replication"
)

// newPartition returns partition 0 of topic "__internal" on a memory store:
// the leader (this broker alone in the ISR) when leader is set, else a
// follower of broker 2.
func newPartition(t *testing.T, leader bool) *replication.Partition {
	t.Helper()
	st, err := engine.Open("memory", engine.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	l, err := st.CreateLog(engine.PartitionID{Topic: "__internal"}, engine.LogConfig{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := replication.NewPartition(l, replication.Options{Topic: "__internal", Partition: 0, BrokerID: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	state := replication.LeaderAndIsr{Leader: 1, LeaderEpoch: 0, ISR: []int32{1}, Replicas: []int32{1}}
	if !leader {
		state = replication.LeaderAndIsr{Leader: 2, LeaderEpoch: 0, ISR: []int32{1, 2}, Replicas: []int32{1, 2}}
		err = p.MakeFollower(state)
	} else {
		err = p.MakeLeader(state)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}
