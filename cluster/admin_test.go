package cluster

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

// TestManualAssignment: CreateTopicAssigned and AddPartitionsAssigned write
// the given replicas (preferred leader first, which leads), and refuse an
// uneven replication factor, a broker twice, or a broker that is not live.
func TestManualAssignment(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	ctl := tc.controller()
	ctx := context.Background()
	want := [][]int32{{3, 1}, {2, 3}, {3, 2}}
	if err := ctl.CreateTopicAssigned(ctx, "m", want, nil, [16]byte{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "partitions online", func() bool {
		for p := range want {
			if st, ok := tc.state("m", int32(p)); !ok || st.Leader != want[p][0] {
				return false
			}
		}
		return true
	})
	if _, got, err := ctl.TopicAssignment("m"); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("assignment %v %v, want %v", got, err, want)
	}
	for _, bad := range [][][]int32{{{1, 1}}, {{1, 2}, {3}}, {{1, 9}}, {{}}} {
		if err := ctl.CreateTopicAssigned(ctx, "bad", bad, nil, [16]byte{}); !errors.Is(err, ErrInvalidReplicaAssignment) {
			t.Errorf("assignment %v: %v, want ErrInvalidReplicaAssignment", bad, err)
		}
	}
	if err := ctl.AddPartitionsAssigned(ctx, "m", 5, [][]int32{{1, 2}}); !errors.Is(err, ErrInvalidReplicaAssignment) {
		t.Errorf("one assignment for two new partitions: %v", err)
	}
	if err := ctl.AddPartitionsAssigned(ctx, "m", 4, [][]int32{{1, 2, 3}}); !errors.Is(err, ErrInvalidReplicaAssignment) {
		t.Errorf("three replicas where the topic has two: %v", err)
	}
	if err := ctl.AddPartitionsAssigned(ctx, "m", 4, [][]int32{{1, 2}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new partition led by broker 1", func() bool { st, ok := tc.state("m", 3); return ok && st.Leader == 1 })
}
