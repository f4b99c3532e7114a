package replication

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice/sluice/engine"
)

// TestFollowerSettlesUnknownLogStart: a follower whose tiered log lost its
// log start offset (loaded without a log-start-offset-checkpoint entry:
// segment.Log.LogStartUnknown) reports its local start; a leader's log
// start below that settles it there (Kafka's follower takes the leader's
// logStartOffset), since the leader's low watermark counts the follower
// as having reached it. One above the local start settles it at the local
// start, then moves both there as before.
func TestFollowerSettlesUnknownLogStart(t *testing.T) {
	cfg := engine.LogConfig{SegmentBytes: 1024, RemoteStorage: true}
	for _, leaderStart := range []int64{3, 70} {
		dir := t.TempDir()
		st, err := engine.Open("segment", engine.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		l, err := st.CreateLog(testID, cfg)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewPartition(l, Options{Topic: testID.Topic, Partition: testID.Partition, BrokerID: 1, Logger: quietLogger})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.MakeLeader(LeaderAndIsr{Leader: 1, LeaderEpoch: 1, ISR: []int32{1}, Replicas: []int32{1}}); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 40; i++ {
			if _, err := p.Append(ctx, batch(-1, 0, -1, 2), 1); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.DeleteLocalBefore(50); err != nil {
			t.Fatal(err)
		}
		p.Close()
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		// The checkpoint is lost: the log start is unknown on load.
		if err := os.Remove(filepath.Join(dir, "log-start-offset-checkpoint")); err != nil {
			t.Fatal(err)
		}
		st, err = engine.Open("segment", engine.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		l, err = st.OpenLog(testID, cfg)
		if err != nil {
			t.Fatal(err)
		}
		p, err = NewPartition(l, Options{Topic: testID.Topic, Partition: testID.Partition, BrokerID: 2, Logger: quietLogger})
		if err != nil {
			t.Fatal(err)
		}
		local := p.LogStartOffset() // the first segment's base
		if local <= 3 || local >= 70 {
			t.Fatalf("local start %d, want in (3, 70)", local)
		}
		if !p.LogStartUnknown() {
			t.Fatalf("log start %d known after losing the checkpoint", p.LogStart())
		}
		if err := p.MakeFollower(LeaderAndIsr{Leader: 1, LeaderEpoch: 2, ISR: []int32{1, 2}, Replicas: []int32{1, 2}}); err != nil {
			t.Fatal(err)
		}
		p.followLogStart(leaderStart) // from a fetch answer
		// Above the local start the records below are deleted too (the
		// high watermark, 80, is above it).
		wantLocal := max(leaderStart, local)
		if p.LogStartUnknown() || p.LogStart() != leaderStart || p.LogStartOffset() != wantLocal {
			t.Errorf("leader's start %d: log start %d (unknown %v), local start %d; want %d, %d",
				leaderStart, p.LogStart(), p.LogStartUnknown(), p.LogStartOffset(), leaderStart, wantLocal)
		}
		p.Close()
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
