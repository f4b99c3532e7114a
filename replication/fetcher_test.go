package replication

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
)

// Replication through FetcherManagers and the fake transport
// (cluster_helpers_test.go). Waits are bounded; nothing asserts on timing.

func TestFollowersCatchUp(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		c := newTestCluster(t, backend)
		leader := c.addBroker(1, []epochRun{{0, 3}, {0, 2}}, Options{})
		c.addBroker(2, nil, Options{})
		c.addBroker(3, nil, Options{})
		c.elect(1, 1, 1, 2, 3)
		for i := 0; i < 5; i++ {
			res, err := leader.Append(ctx, batch(-1, 0, -1, 2), -1)
			if err != nil {
				t.Fatal(err)
			}
			// acks=-1 returned: every ISR member has the records.
			for _, id := range []int32{2, 3} {
				if end := c.part(id).LogEndOffset(); end <= res.LastOffset {
					t.Fatalf("acks=-1 returned at %d with replica %d at %d", res.LastOffset, id, end)
				}
			}
		}
		c.waitInSync(1)
		waitFor(t, "followers to learn the HW", func() bool {
			return c.part(2).HighWatermark() == 15 && c.part(3).HighWatermark() == 15
		})
		if hw := leader.HighWatermark(); hw != 15 {
			t.Fatalf("leader HW %d", hw)
		}
		want := []engine.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 5}}
		for id := int32(1); id <= 3; id++ {
			if got := epochsOf(c.part(id)); !slices.Equal(got, want) {
				t.Fatalf("broker %d epochs %v, want %v", id, got, want)
			}
		}
		// Consumers still read only below the HW; the follower's Read too.
		if _, err := c.part(2).Append(ctx, batch(-1, 0, -1, 1), 1); !errors.Is(err, ErrNotLeader) {
			t.Fatalf("append on a follower: %v", err)
		}
	})
}

// TestTruncateUncommittedOldEpoch (KIP-101 (a)): a follower holding
// uncommitted records from a deposed leader's epoch cuts them where the new
// leader's log diverges and takes the leader's records instead.
func TestTruncateUncommittedOldEpoch(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		c := newTestCluster(t, backend)
		c.addBroker(1, []epochRun{{1, 5}, {3, 3}}, Options{})
		c.addBroker(2, []epochRun{{1, 5}, {2, 5}}, Options{})
		c.elect(1, 3, 1, 2)
		c.waitInSync(1)
		if got := c.logs[2].truncated(); !slices.Equal(got, []int64{5}) {
			t.Fatalf("follower truncations %v, want [5]", got)
		}
		want := []engine.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 5}}
		if got := epochsOf(c.part(2)); !slices.Equal(got, want) {
			t.Fatalf("follower epochs %v, want %v", got, want)
		}
	})
}

// TestNeverTruncateCommitted (KIP-101 (b)): a follower whose own HW lags
// does not truncate to it (the pre-KIP-101 bug that lost committed
// records); it cuts only the tail the leader does not have.
func TestNeverTruncateCommitted(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		c := newTestCluster(t, backend)
		// Epoch 1's leader wrote 0..12; broker 1 got 0..9 and leads epoch 2.
		c.addBroker(1, []epochRun{{1, 4}, {1, 6}}, Options{})
		f := c.addBroker(2, []epochRun{{1, 4}, {1, 6}, {1, 3}}, Options{})
		if err := f.MakeFollower(c.state(1, 1, 1, 2)); err != nil {
			t.Fatal(err)
		}
		f.lowerHW(4) // the follower had learnt only HW 4
		c.elect(1, 2, 1, 2)
		if _, err := c.part(1).Append(ctx, batch(-1, 0, -1, 2), -1); err != nil {
			t.Fatal(err)
		}
		c.waitInSync(1)
		if got := c.logs[2].truncated(); !slices.Equal(got, []int64{10}) {
			t.Fatalf("follower truncations %v, want [10]", got)
		}
		if f.HighWatermark() < 4 {
			t.Fatalf("follower HW %d went back", f.HighWatermark())
		}
	})
}

// TestKIP279TwoRounds (c): leader and follower each hold an epoch the other
// lacks. The follower asks for its epoch 3, the leader answers epoch 2
// ending at 10; the follower has no epoch 2, so it cuts to the end of its
// epoch 1 (5) and asks again for epoch 1, which both agree ends at 5.
func TestKIP279TwoRounds(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		c := newTestCluster(t, backend)
		c.addBroker(1, []epochRun{{1, 5}, {2, 5}, {4, 3}}, Options{})
		c.addBroker(2, []epochRun{{1, 5}, {3, 3}}, Options{})
		c.elect(1, 4, 1, 2)
		c.waitInSync(1)
		if got := c.logs[2].truncated(); !slices.Equal(got, []int64{5}) {
			t.Fatalf("follower truncations %v, want [5]", got)
		}
		if n := c.oflePerBroker[2].Load(); n != 2 {
			t.Fatalf("%d OffsetForLeaderEpoch rounds, want 2", n)
		}
		want := []engine.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 5}, {Epoch: 4, StartOffset: 10}}
		if got := epochsOf(c.part(2)); !slices.Equal(got, want) {
			t.Fatalf("follower epochs %v, want %v", got, want)
		}
	})
}

// TestLeaderFailover: the leader is cut off with an unreplicated tail and a
// waiting acks=-1 request; a follower is elected; the old leader becomes a
// follower, truncates its tail, catches up and rejoins the ISR.
func TestLeaderFailover(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		c := newTestCluster(t, backend)
		old := c.addBroker(1, nil, Options{})
		c.addBroker(2, nil, Options{})
		c.addBroker(3, nil, Options{})
		c.elect(1, 1, 1, 2, 3)
		for i := 0; i < 3; i++ {
			if _, err := old.Append(ctx, batch(-1, 0, -1, 2), -1); err != nil {
				t.Fatal(err)
			}
		}
		c.waitInSync(1)
		committed := old.HighWatermark()
		if committed != 6 {
			t.Fatalf("HW %d, want 6", committed)
		}

		// Cut broker 1 off; its tail stays unreplicated.
		c.setDown(1, true)
		if _, err := old.Append(ctx, batch(-1, 0, -1, 3), 1); err != nil {
			t.Fatal(err)
		}
		waiter := make(chan error, 1)
		go func() {
			_, err := old.Append(ctx, batch(-1, 0, -1, 1), -1)
			waiter <- err
		}()
		waitFor(t, "the tail", func() bool { return old.LogEndOffset() == 10 })

		// The controller elects 2 (epoch 2, ISR {2,3}); 1 comes back as a
		// follower.
		c.setDown(1, false)
		c.fetcher(2).Remove(c.part(2))
		c.elect(2, 2, 2, 3)
		if err := <-waiter; !errors.Is(err, ErrNotLeader) {
			t.Fatalf("acks=-1 waiter on the old leader: %v", err)
		}
		res, err := c.part(2).Append(ctx, batch(-1, 0, -1, 4), -1)
		if err != nil {
			t.Fatal(err)
		}
		if res.BaseOffset != 6 {
			t.Fatalf("new leader appended at %d, want 6", res.BaseOffset)
		}
		c.waitInSync(2)
		if got := c.logs[1].truncated(); !slices.Equal(got, []int64{6}) {
			t.Fatalf("old leader truncations %v, want [6]", got)
		}
		waitFor(t, "the old leader to rejoin the ISR", func() bool {
			return slices.Equal(c.part(2).ISR(), []int32{2, 3, 1})
		})
		c.mu.Lock()
		last := c.alters[len(c.alters)-1]
		c.mu.Unlock()
		if last.broker != 2 || last.st.LeaderEpoch != 2 || !slices.Equal(last.st.ISR, []int32{2, 3, 1}) {
			t.Fatalf("last AlterISR %+v", last)
		}
		if !bytes.Equal(logBytes(t, old), logBytes(t, c.part(2))) {
			t.Fatal("old leader's log differs")
		}
		if _, err := c.part(2).Append(ctx, batch(-1, 0, -1, 1), -1); err != nil {
			t.Fatal(err)
		}
		c.waitInSync(2)
	})
}

// TestFencedFollowerWaitsForNewEpoch: a follower added with an old epoch is
// fenced by the leader and makes no progress until it is re-added with the
// leader's epoch.
func TestFencedFollowerWaitsForNewEpoch(t *testing.T) {
	c := newTestCluster(t, "memory")
	leader := c.addBroker(1, []epochRun{{1, 3}}, Options{})
	f := c.addBroker(2, nil, Options{})
	if err := leader.MakeLeader(c.state(1, 2, 1)); err != nil {
		t.Fatal(err)
	}
	if err := f.MakeFollower(c.state(1, 1, 1)); err != nil {
		t.Fatal(err)
	}
	c.fetcher(2).Add(f, 1, 1)
	if _, _, err := leader.HandleOffsetForLeaderEpoch(1, 1); !errors.Is(err, ErrFencedLeaderEpoch) {
		t.Fatalf("leader answers epoch 1: %v", err)
	}
	if f.LogEndOffset() != 0 {
		t.Fatalf("fenced follower fetched up to %d", f.LogEndOffset())
	}
	if err := f.MakeFollower(c.state(1, 2, 1)); err != nil {
		t.Fatal(err)
	}
	c.fetcher(2).Add(f, 1, 2)
	c.waitInSync(1)
}

// TestRetryBackoff: a refused partition's pauses start short and double up
// to replica.fetch.backoff.ms.
func TestRetryBackoff(t *testing.T) {
	for _, tc := range []struct {
		n    int
		max  time.Duration
		want time.Duration
	}{
		{1, time.Second, 10 * time.Millisecond},
		{2, time.Second, 20 * time.Millisecond},
		{3, time.Second, 40 * time.Millisecond},
		{7, time.Second, 640 * time.Millisecond},
		{8, time.Second, time.Second},
		{1000, time.Second, time.Second},
		{1, 5 * time.Millisecond, 5 * time.Millisecond},
		{3, 30 * time.Millisecond, 30 * time.Millisecond},
	} {
		t.Run(fmt.Sprintf("n=%d/max=%v", tc.n, tc.max), func(t *testing.T) {
			if got := retryBackoff(tc.n, tc.max); got != tc.want {
				t.Fatalf("retryBackoff(%d, %v) = %v, want %v", tc.n, tc.max, got, tc.want)
			}
		})
	}
}

// refusals returns the refusals in a row of p in broker id's fetcher (-1:
// p is not fetching).
func (c *testCluster) refusals(id int32, p *Partition) int {
	m := c.fetcher(id)
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.parts[p]
	if f == nil {
		return -1
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if st := f.parts[p]; st != nil {
		return st.refusals
	}
	return -1
}

// TestFollowersBeforeLeader: followers told of a new leader before it has
// become one are refused (NOT_LEADER_OR_FOLLOWER) and retry; once it leads,
// an acks=-1 append completes with both in the ISR, and their refusal runs
// end, so a later refusal starts again from the shortest pause.
func TestFollowersBeforeLeader(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		c := newTestCluster(t, backend)
		leader := c.addBroker(1, nil, Options{})
		c.addBroker(2, nil, Options{})
		c.addBroker(3, nil, Options{})
		st := c.state(1, 1, 1, 2, 3)
		for _, id := range []int32{2, 3} {
			c.follow(id, c.part(id), st)
		}
		for _, id := range []int32{2, 3} {
			waitFor(t, fmt.Sprintf("follower %d to be refused twice", id), func() bool { return c.refusals(id, c.part(id)) >= 2 })
		}
		if err := leader.MakeLeader(st); err != nil {
			t.Fatal(err)
		}
		res, err := leader.Append(ctx, batch(-1, 0, -1, 3), -1)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []int32{2, 3} {
			if end := c.part(id).LogEndOffset(); end <= res.LastOffset {
				t.Fatalf("acks=-1 returned at %d with replica %d at %d", res.LastOffset, id, end)
			}
			waitFor(t, fmt.Sprintf("follower %d's refusals to reset", id), func() bool { return c.refusals(id, c.part(id)) == 0 })
		}
	})
}
