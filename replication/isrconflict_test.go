package replication

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestISRConflict: an ISR write refused on a version conflict hands the
// leader the state read back (StateConflictError). Another leader or a
// newer epoch fences the replica until a LeaderAndIsr; the same leader and
// epoch at a newer version is adopted and the change made again on it.
// (broker/isrconflict_test.go runs the same through ZooKeeper.)
func TestISRConflict(t *testing.T) {
	cases := []struct {
		name string
		// current is the state read back after the first write.
		current LeaderAndIsr
		// wantWrites is the ISR of each AlterISR call; wantISR and
		// wantVersion the leader's state after the shrink.
		wantWrites  [][]int32
		wantLeader  bool
		wantISR     []int32
		wantVersion int32
	}{
		{name: "another leader at a newer epoch fences",
			current:    LeaderAndIsr{Leader: 2, LeaderEpoch: 2, ISR: []int32{2, 3}, ZkVersion: 5},
			wantWrites: [][]int32{{1, 2}}, wantLeader: false, wantISR: []int32{1, 2, 3}, wantVersion: 0},
		{name: "this leader at a newer epoch fences",
			current:    LeaderAndIsr{Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 2, 3}, ZkVersion: 5},
			wantWrites: [][]int32{{1, 2}}, wantLeader: false, wantISR: []int32{1, 2, 3}, wantVersion: 0},
		{name: "same leader and epoch: adopt and write again",
			current:    LeaderAndIsr{Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2, 3}, ZkVersion: 7},
			wantWrites: [][]int32{{1, 2}, {1, 2}}, wantLeader: true, wantISR: []int32{1, 2}, wantVersion: 8},
		{name: "same leader and epoch, change already made: adopt only",
			current:    LeaderAndIsr{Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2}, ZkVersion: 7},
			wantWrites: [][]int32{{1, 2}}, wantLeader: true, wantISR: []int32{1, 2}, wantVersion: 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var writes []LeaderAndIsr
			alter := func(_ context.Context, _ string, _ int32, st LeaderAndIsr) (int32, error) {
				mu.Lock()
				defer mu.Unlock()
				writes = append(writes, st)
				if st.ZkVersion == tc.current.ZkVersion {
					return st.ZkVersion + 1, nil
				}
				return 0, &StateConflictError{Current: tc.current, Err: errors.New("bad version")}
			}
			c, p := newLeader(t, "memory", Options{AlterISR: alter}, 1, 2, 3)
			t0 := c.clock.Now()
			appendN(t, p, 2)
			p.UpdateFollowerState(2, 2, t0)
			p.UpdateFollowerState(3, 0, t0)
			t1 := t0.Add(lag + time.Second)
			p.UpdateFollowerState(2, 2, t1)
			p.MaybeShrinkISR(t1) // 3 lags

			mu.Lock()
			var got [][]int32
			for _, w := range writes {
				got = append(got, w.ISR)
			}
			mu.Unlock()
			if !slices.EqualFunc(got, tc.wantWrites, slices.Equal[[]int32]) {
				t.Fatalf("AlterISR calls with ISRs %v, want %v", got, tc.wantWrites)
			}
			if p.IsLeader() != tc.wantLeader {
				t.Fatalf("IsLeader %v, want %v", p.IsLeader(), tc.wantLeader)
			}
			st := p.State()
			if !slices.Equal(st.ISR, tc.wantISR) || st.ZkVersion != tc.wantVersion {
				t.Fatalf("state %+v, want ISR %v version %d", st, tc.wantISR, tc.wantVersion)
			}
			_, err := p.Append(ctx, batch(-1, 0, -1, 1), 1)
			if tc.wantLeader {
				if err != nil {
					t.Fatalf("append on the leader: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrNotLeader) {
				t.Fatalf("append on the fenced replica: %v, want ErrNotLeader", err)
			}
			if _, err := p.UpdateFollowerState(2, 2, t0); err == nil {
				t.Fatal("the fenced replica accepted a follower fetch")
			}
			// The controller's LeaderAndIsr arrives: a follower of the new epoch.
			if err := p.MakeFollower(tc.current); err != nil {
				t.Fatalf("MakeFollower after the fence: %v", err)
			}
		})
	}
}
