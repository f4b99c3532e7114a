package replication

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

// Leader-side tests that drive UpdateFollowerState and MaybeShrinkISR by
// hand, with explicit times: no fetcher runs.

const lag = 10 * time.Second

// newLeader returns broker 1 leading epoch 1 with replicas {1,2,3} and
// the given ISR.
func newLeader(t *testing.T, backend string, opts Options, isr ...int32) (*testCluster, *Partition) {
	t.Helper()
	c := newTestCluster(t, backend)
	opts.ReplicaLagTimeMax = lag
	p := c.addBroker(1, nil, opts)
	c.addBroker(2, nil, Options{})
	c.addBroker(3, nil, Options{})
	if err := p.MakeLeader(c.state(1, 1, isr...)); err != nil {
		t.Fatal(err)
	}
	return c, p
}

func appendN(t *testing.T, p *Partition, n int) AppendResult {
	t.Helper()
	res, err := p.Append(ctx, batch(-1, 0, -1, n), 1)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestSingleNodeDefaults(t *testing.T) {
	p, _ := newPartition(t, openStore(t, "memory"), engine.LogConfig{}, Options{BrokerID: 7})
	if !p.IsLeader() || !slices.Equal(p.ISR(), []int32{7}) {
		t.Fatalf("leader %v ISR %v", p.IsLeader(), p.ISR())
	}
	if _, err := p.Append(ctx, batch(-1, 0, -1, 3), -1); err != nil {
		t.Fatal(err)
	}
	if p.HighWatermark() != 3 {
		t.Fatalf("HW %d", p.HighWatermark())
	}
	// The current epoch counts from where the partition opened.
	if e, end := p.EndOffsetForEpoch(0); e != 0 || end != 3 {
		t.Fatalf("EndOffsetForEpoch(0) = %d, %d", e, end)
	}
	if err := p.AppendAsFollower(batch(-1, 0, -1, 1)); !errors.Is(err, ErrNotFollower) {
		t.Fatalf("AppendAsFollower on a leader: %v", err)
	}
	if err := p.TruncateTo(0); !errors.Is(err, ErrNotFollower) {
		t.Fatalf("TruncateTo on a leader: %v", err)
	}
}

// TestHWFollowsISR: the HW is the smallest log end in the ISR; a follower
// of unknown log end holds it; it never moves back.
func TestHWFollowsISR(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		c, p := newLeader(t, backend, Options{}, 1, 2, 3)
		now := c.clock.Now()
		appendN(t, p, 10)
		if hw := p.HighWatermark(); hw != 0 {
			t.Fatalf("HW %d before any follower fetched", hw)
		}
		steps := []struct {
			replica int32
			offset  int64
			wantHW  int64
		}{
			{2, 10, 0}, // 3 unknown
			{3, 4, 4},
			{3, 7, 7},
			{2, 6, 7}, // never backwards (a follower cannot really go back)
			{2, 10, 7},
			{3, 10, 10},
			{9, 10, 10}, // not a replica: ignored
		}
		for i, s := range steps {
			if hw, _ := p.UpdateFollowerState(s.replica, s.offset, now); hw != s.wantHW || p.HighWatermark() != s.wantHW {
				t.Fatalf("step %d: replica %d at %d: HW %d, want %d", i, s.replica, s.offset, hw, s.wantHW)
			}
		}
	})
}

// TestAcksAllWaitsForISR: acks=-1 returns only when every ISR member has
// fetched past the request's records.
func TestAcksAllWaitsForISR(t *testing.T) {
	c, p := newLeader(t, "memory", Options{}, 1, 2, 3)
	now := c.clock.Now()
	done := make(chan error, 1)
	go func() {
		_, err := p.Append(ctx, batch(-1, 0, -1, 5), -1)
		done <- err
	}()
	waitFor(t, "the append", func() bool { return p.LogEndOffset() == 5 })
	p.UpdateFollowerState(2, 5, now)
	p.UpdateFollowerState(3, 4, now)
	select {
	case err := <-done:
		t.Fatalf("acks=-1 returned (%v) with replica 3 at 4", err)
	default:
	}
	p.UpdateFollowerState(3, 5, now)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if p.HighWatermark() != 5 {
		t.Fatalf("HW %d", p.HighWatermark())
	}
}

func TestMinInsyncReplicas(t *testing.T) {
	t.Run("before append", func(t *testing.T) {
		_, p := newLeader(t, "memory", Options{MinInsyncReplicas: 2}, 1)
		if _, err := p.Append(ctx, batch(-1, 0, -1, 1), -1); !errors.Is(err, ErrNotEnoughReplicas) {
			t.Fatalf("acks=-1 with ISR {1}: %v", err)
		}
		if p.LogEndOffset() != 0 {
			t.Fatalf("log end %d: the refused request was appended", p.LogEndOffset())
		}
		if _, err := p.Append(ctx, batch(-1, 0, -1, 1), 1); err != nil {
			t.Fatalf("acks=1: %v", err)
		}
		p.SetMinInsyncReplicas(1)
		if _, err := p.Append(ctx, batch(-1, 0, -1, 1), -1); err != nil {
			t.Fatalf("acks=-1 after lowering min.insync.replicas: %v", err)
		}
	})
	t.Run("after append", func(t *testing.T) {
		c, p := newLeader(t, "memory", Options{MinInsyncReplicas: 2}, 1, 2)
		t0 := c.clock.Now()
		p.UpdateFollowerState(2, 0, t0)
		done := make(chan error, 1)
		go func() {
			_, err := p.Append(ctx, batch(-1, 0, -1, 3), -1)
			done <- err
		}()
		waitFor(t, "the append", func() bool { return p.LogEndOffset() == 3 })
		p.MaybeShrinkISR(t0.Add(lag)) // exactly the lag: still in
		if !slices.Equal(p.ISR(), []int32{1, 2}) {
			t.Fatalf("ISR %v after exactly the lag time", p.ISR())
		}
		p.MaybeShrinkISR(t0.Add(lag + time.Millisecond))
		if err := <-done; !errors.Is(err, ErrNotEnoughReplicasAfterAppend) {
			t.Fatalf("waiter: %v, want ErrNotEnoughReplicasAfterAppend", err)
		}
		if !slices.Equal(p.ISR(), []int32{1}) || p.HighWatermark() != 3 {
			t.Fatalf("ISR %v HW %d", p.ISR(), p.HighWatermark())
		}
	})
}

// TestISRShrinkAndExpand: a follower that stops fetching leaves the ISR
// after the lag time, one that catches up rejoins, both through AlterISR
// with the version guard; a failed AlterISR changes nothing and is retried.
// Options.OnISRChange hears of each applied change, not of a failed one.
func TestISRShrinkAndExpand(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		var shrinks, expands atomic.Int32
		onChange := func(shrink bool) {
			if shrink {
				shrinks.Add(1)
			} else {
				expands.Add(1)
			}
		}
		c, p := newLeader(t, backend, Options{OnISRChange: onChange}, 1, 2, 3)
		t0 := c.clock.Now()
		appendN(t, p, 4)
		p.UpdateFollowerState(2, 4, t0) // caught up
		p.UpdateFollowerState(3, 2, t0) // behind

		p.MaybeShrinkISR(t0.Add(lag))
		if len(c.alters) != 0 {
			t.Fatalf("AlterISR called within the lag time: %+v", c.alters)
		}
		p.UpdateFollowerState(2, 4, t0.Add(lag/2)) // caught up again
		appendN(t, p, 1)                           // end 5
		t1 := t0.Add(lag + time.Second)
		// 2 fetches again, behind the leader's new end but at the end the
		// leader had at its previous fetch: caught up as of that fetch.
		p.UpdateFollowerState(2, 4, t1)
		p.MaybeShrinkISR(t1)
		if got := p.ISR(); !slices.Equal(got, []int32{1, 2}) {
			t.Fatalf("ISR %v, want [1 2]", got)
		}
		if len(c.alters) != 1 || !slices.Equal(c.alters[0].st.ISR, []int32{1, 2}) || c.alters[0].st.LeaderEpoch != 1 {
			t.Fatalf("AlterISR calls %+v", c.alters)
		}
		if v := p.State().ZkVersion; v != 1 {
			t.Fatalf("zk version %d after the write", v)
		}
		if shrinks.Load() != 1 || expands.Load() != 0 {
			t.Fatalf("OnISRChange: %d shrinks, %d expands after one shrink", shrinks.Load(), expands.Load())
		}
		// HW: min over {1, 2} = 4.
		if p.HighWatermark() != 4 {
			t.Fatalf("HW %d, want 4", p.HighWatermark())
		}

		// 3 catches up to the HW but the write fails: no change.
		c.mu.Lock()
		c.alterErr = errors.New("zk down")
		c.mu.Unlock()
		p.UpdateFollowerState(3, 4, t1)
		if got := p.ISR(); !slices.Equal(got, []int32{1, 2}) {
			t.Fatalf("ISR %v after a failed AlterISR", got)
		}
		if expands.Load() != 0 {
			t.Fatal("OnISRChange called for a failed AlterISR")
		}
		c.mu.Lock()
		c.alterErr = nil
		c.mu.Unlock()
		// Retried on its next fetch.
		p.UpdateFollowerState(3, 5, t1)
		if got := p.ISR(); !slices.Equal(got, []int32{1, 2, 3}) {
			t.Fatalf("ISR %v, want [1 2 3]", got)
		}
		last := c.alters[len(c.alters)-1]
		if !slices.Equal(last.st.ISR, []int32{1, 2, 3}) || last.st.ZkVersion != 1 {
			t.Fatalf("last AlterISR %+v", last)
		}
		if p.State().ZkVersion != 2 {
			t.Fatalf("zk version %d", p.State().ZkVersion)
		}
		if shrinks.Load() != 1 || expands.Load() != 1 {
			t.Fatalf("OnISRChange: %d shrinks, %d expands, want 1 and 1", shrinks.Load(), expands.Load())
		}
	})
}

// TestISRExpandNeedsEpochStart: a follower below the start of the current
// leader epoch does not join even at the HW (Kafka's rule).
func TestISRExpandNeedsEpochStart(t *testing.T) {
	c := newTestCluster(t, "memory")
	p := c.addBroker(1, []epochRun{{0, 5}}, Options{})
	c.addBroker(2, nil, Options{})
	c.addBroker(3, nil, Options{})
	// The HW stays at 3 (3 has not fetched), the epoch starts at 5.
	if err := p.MakeFollower(c.state(2, 1, 1, 2)); err != nil {
		t.Fatal(err)
	}
	p.lowerHW(3)
	if err := p.MakeLeader(c.state(1, 2, 1, 3)); err != nil {
		t.Fatal(err)
	}
	now := c.clock.Now()
	p.UpdateFollowerState(2, 4, now)
	if got := p.ISR(); !slices.Equal(got, []int32{1, 3}) || p.HighWatermark() != 3 {
		t.Fatalf("ISR %v HW %d: joined below the epoch start", got, p.HighWatermark())
	}
	p.UpdateFollowerState(2, 5, now)
	if got := p.ISR(); !slices.Equal(got, []int32{1, 3, 2}) {
		t.Fatalf("ISR %v, want [1 3 2]", got)
	}
}

// TestMakeFollowerFailsWaiters: an acks=-1 request waiting for the ISR
// fails with ErrNotLeader when the replica stops leading; later appends too.
func TestMakeFollowerFailsWaiters(t *testing.T) {
	c, p := newLeader(t, "memory", Options{}, 1, 2)
	done := make(chan error, 1)
	go func() {
		_, err := p.Append(ctx, batch(-1, 0, -1, 2), -1)
		done <- err
	}()
	waitFor(t, "the append", func() bool { return p.LogEndOffset() == 2 })
	if err := p.MakeFollower(c.state(2, 2, 2)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrNotLeader) {
		t.Fatalf("waiter: %v", err)
	}
	if _, err := p.Append(ctx, batch(-1, 0, -1, 1), 1); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append on a follower: %v", err)
	}
	if p.IsLeader() {
		t.Fatal("still leader")
	}
	if err := p.MakeLeader(c.state(1, 1, 1)); !errors.Is(err, ErrStaleLeaderEpoch) {
		t.Fatalf("MakeLeader with an older epoch: %v", err)
	}
	if err := p.CheckLeaderEpoch(1, false); !errors.Is(err, ErrFencedLeaderEpoch) {
		t.Fatalf("CheckLeaderEpoch(1): %v", err)
	}
	if err := p.CheckLeaderEpoch(3, false); !errors.Is(err, ErrUnknownLeaderEpoch) {
		t.Fatalf("CheckLeaderEpoch(3): %v", err)
	}
	if err := p.CheckLeaderEpoch(2, true); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("CheckLeaderEpoch(2) on a follower: %v", err)
	}
}

// TestMakeLeaderKeepsHWAndResetsFollowers: a new leader keeps its HW,
// answers OffsetForLeaderEpoch for its new epoch from the log end it had,
// and does not shrink followers it has not heard from yet.
func TestMakeLeaderKeepsHWAndResetsFollowers(t *testing.T) {
	c := newTestCluster(t, "memory")
	p := c.addBroker(1, []epochRun{{1, 4}, {1, 2}}, Options{ReplicaLagTimeMax: lag})
	c.addBroker(2, nil, Options{})
	if err := p.MakeFollower(c.state(2, 1, 1, 2)); err != nil {
		t.Fatal(err)
	}
	p.lowerHW(4)
	c.clock.Add(time.Hour)
	if err := p.MakeLeader(c.state(1, 3, 1, 2)); err != nil {
		t.Fatal(err)
	}
	if p.HighWatermark() != 4 {
		t.Fatalf("HW %d, want 4 kept", p.HighWatermark())
	}
	if e, end := p.EndOffsetForEpoch(1); e != 1 || end != 6 {
		t.Fatalf("EndOffsetForEpoch(1) = %d, %d; want 1, 6", e, end)
	}
	if e, end := p.EndOffsetForEpoch(3); e != 3 || end != 6 {
		t.Fatalf("EndOffsetForEpoch(3) = %d, %d; want 3, 6", e, end)
	}
	p.MaybeShrinkISR(c.clock.Now().Add(lag))
	if !slices.Equal(p.ISR(), []int32{1, 2}) {
		t.Fatalf("ISR %v: shrunk a follower right after election", p.ISR())
	}
	appendN(t, p, 1)
	if got := epochsOf(p); got[len(got)-1].Epoch != 3 || got[len(got)-1].StartOffset != 6 {
		t.Fatalf("epochs %v", got)
	}
}

// TestFollowerTruncateAndRestart: TruncateTo inside a batch cuts the whole
// batch and lowers the HW; RestartAt at or below the log start empties the
// log there; above it, backends without TruncateFullyAndStartAt refuse.
func TestFollowerTruncateAndRestart(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		c := newTestCluster(t, backend)
		p := c.addBroker(1, []epochRun{{1, 5}, {1, 5}, {2, 5}}, Options{})
		if err := p.MakeFollower(c.state(2, 2, 1, 2)); err != nil {
			t.Fatal(err)
		}
		if err := p.TruncateTo(7); err != nil {
			t.Fatal(err)
		}
		if p.LogEndOffset() != 5 || p.HighWatermark() != 5 {
			t.Fatalf("end %d HW %d, want 5, 5", p.LogEndOffset(), p.HighWatermark())
		}
		if got := epochsOf(p); len(got) != 1 || got[0].Epoch != 1 {
			t.Fatalf("epochs %v", got)
		}
		if err := p.TruncateTo(9); err != nil || p.LogEndOffset() != 5 {
			t.Fatalf("TruncateTo above the end: %v, end %d", err, p.LogEndOffset())
		}
		if err := p.AppendAsFollower(batch(-1, 0, -1, 1)); !errors.Is(err, engine.ErrOffsetMismatch) {
			t.Fatalf("append at offset 0 onto end 5: %v", err)
		}
		if err := p.RestartAt(100); !errors.Is(err, engine.ErrOffsetOutOfRange) {
			t.Fatalf("RestartAt above the start: %v", err)
		}
		if err := p.RestartAt(0); err != nil || p.LogEndOffset() != 0 || p.LogStartOffset() != 0 || p.HighWatermark() != 0 {
			t.Fatalf("RestartAt(0): %v, start %d end %d HW %d", err, p.LogStartOffset(), p.LogEndOffset(), p.HighWatermark())
		}
	})
}

// TestRestoreHighWatermark: a replica reopened in cluster mode starts its
// high watermark at the checkpointed value (clamped to the log), so a
// consumer does not see records past what the ISR had committed.
func TestRestoreHighWatermark(t *testing.T) {
	cases := []struct {
		name    string
		restore bool
		hw      int64
		want    int64
	}{
		{"single node: log end", false, 0, 10},
		{"checkpointed", true, 4, 4},
		{"above the log end", true, 99, 10},
		{"below the log start", true, -5, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := openStore(t, "memory")
			l, err := store.CreateLog(engine.PartitionID{Topic: "t", Partition: 0}, engine.LogConfig{})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 10; i++ {
				if _, err := l.Append(batch(-1, 0, -1, 1), engine.AppendOptions{AssignOffsets: true}); err != nil {
					t.Fatal(err)
				}
			}
			p, err := NewPartition(l, Options{RestoreHighWatermark: tc.restore, HighWatermark: tc.hw})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if got := p.HighWatermark(); got != tc.want {
				t.Fatalf("high watermark %d, want %d", got, tc.want)
			}
		})
	}
}

// TestUpdateFollowerStateChecks: UpdateFollowerState checks, under the
// same lock as the update, that the fetch comes from a follower of a
// leader and that its offset is inside the log; a refused fetch changes
// neither the follower's state nor the HW.
func TestUpdateFollowerStateChecks(t *testing.T) {
	c, p := newLeader(t, "memory", Options{}, 1, 2, 3)
	now := c.clock.Now()
	appendN(t, p, 5)
	p.UpdateFollowerState(3, 5, now)
	for _, tc := range []struct {
		name    string
		replica int32
		offset  int64
		want    error
	}{
		{"stranger", 9, 5, errNotReplica},
		{"the leader itself", 1, 5, errNotReplica},
		{"past the log end", 2, 6, engine.ErrOffsetOutOfRange},
		{"below the log start", 2, -1, engine.ErrOffsetOutOfRange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hw, err := p.UpdateFollowerState(tc.replica, tc.offset, now)
			if !errors.Is(err, tc.want) || hw != 0 || p.HighWatermark() != 0 {
				t.Fatalf("= %d, %v (HW %d); want 0, %v", hw, err, p.HighWatermark(), tc.want)
			}
		})
	}
	if hw, err := p.UpdateFollowerState(2, 5, now); err != nil || hw != 5 {
		t.Fatalf("follower 2 at the log end: %d, %v; want 5, nil", hw, err)
	}
	if _, err := p.HandleReplicaFetch(2, 1, 6, 1<<20, now); !errors.Is(err, engine.ErrOffsetOutOfRange) {
		t.Fatalf("HandleReplicaFetch past the log end: %v", err)
	}
	for epoch, want := range map[int32]error{1: ErrUnknownLeaderEpoch, -1: ErrNotLeader} {
		if _, err := p.HandleReplicaFetch(9, epoch, 0, 1<<20, now); !errors.Is(err, want) {
			t.Errorf("HandleReplicaFetch from a stranger with epoch %d: %v, want %v", epoch, err, want)
		}
	}
}

// TestAppendAsFollowerReadsClockOnce: a follower's append of many batches
// reads the clock once, not once per batch.
func TestAppendAsFollowerReadsClockOnce(t *testing.T) {
	var reads atomic.Int64
	st := openStore(t, "memory")
	p, _ := newPartition(t, st, engine.LogConfig{}, Options{BrokerID: 2, ProducerIDExpiration: time.Hour,
		Now: func() time.Time { reads.Add(1); return time.Unix(1_700_000_000, 0) }})
	if err := p.MakeFollower(LeaderAndIsr{Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2}, Replicas: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	var batches []byte
	for i := range 10 {
		b := batch(int64(i), 0, 0, 1)
		record.Batch(b).SetBaseOffset(int64(i))
		batches = append(batches, b...)
	}
	reads.Store(0)
	if err := p.AppendAsFollower(batches); err != nil {
		t.Fatal(err)
	}
	if n := reads.Load(); n != 1 {
		t.Errorf("%d clock reads for one append of 10 batches, want 1", n)
	}
	if got := len(p.producers.producers); got != 10 {
		t.Errorf("%d producers learned, want 10", got)
	}
}

// TestMetricsHooks: Options.OnFollowerAppend hears the bytes a follower
// appended, and an acks=-1 append reports that it waited for the ISR
// (AppendResult.Waited), which the broker's metrics count as remote time.
func TestMetricsHooks(t *testing.T) {
	c := newTestCluster(t, "memory")
	var appended atomic.Int64
	f := c.addBroker(2, nil, Options{OnFollowerAppend: func(n int64) { appended.Add(n) }})
	if err := f.MakeFollower(c.state(1, 1, 1, 2)); err != nil {
		t.Fatal(err)
	}
	b := batch(-1, 0, -1, 3)
	size := int64(len(b))
	if err := f.AppendAsFollower(b); err != nil {
		t.Fatal(err)
	}
	if appended.Load() != size {
		t.Fatalf("OnFollowerAppend heard %d bytes, want %d", appended.Load(), size)
	}

	c2, p := newLeader(t, "memory", Options{}, 1, 2)
	done := make(chan AppendResult, 1)
	go func() {
		res, err := p.Append(ctx, batch(-1, 0, -1, 3), -1)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	waitFor(t, "the append", func() bool { return p.LogEndOffset() == 3 })
	p.UpdateFollowerState(2, 3, c2.clock.Now())
	if res := <-done; res.Waited <= 0 {
		t.Fatalf("acks=-1 append waited %v for the follower", res.Waited)
	}
}
