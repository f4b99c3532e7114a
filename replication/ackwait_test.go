package replication

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sluice/sluice/record"
)

// appendLocal appends b with AppendLocal in a group of its own, sealed.
func appendLocal(t *testing.T, p *Partition, b []byte) (AppendResult, *AckWatch, *AckGroup) {
	t.Helper()
	w, g := &AckWatch{}, NewAckGroup(nil)
	res, err := p.AppendLocal(b, record.Prechecked{}, w, g)
	g.Seal()
	if err != nil {
		t.Fatal(err)
	}
	return res, w, g
}

// waitAck is what a pipelined request's writer does: wait for g, cancel w
// if ctx ends first, and return w's outcome.
func waitAck(ctx context.Context, w *AckWatch, g *AckGroup) error {
	if err := g.Wait(ctx); err != nil {
		w.Cancel(err)
	}
	return w.Err()
}

// TestAckWaitAfterLeaderChange: a wait that starts only after leadership
// moved, the appended records were truncated and the follower's HW passed
// their offsets fails with ErrNotLeader: the outcome was decided when
// leadership moved, not when someone looked (a late WaitCommitted used to
// find HW >= target and acknowledge records no longer in the log).
func TestAckWaitAfterLeaderChange(t *testing.T) {
	c, p := newLeader(t, "memory", Options{}, 1, 2)
	res, w, g := appendLocal(t, p, batch(-1, 0, -1, 2))
	// Leadership moves to 2 before the writer got round to this wait.
	if err := p.MakeFollower(c.state(2, 2, 2)); err != nil {
		t.Fatal(err)
	}
	// Broker 2 never had the records: truncate, then replicate its own.
	if err := p.TruncateTo(0); err != nil {
		t.Fatal(err)
	}
	if err := p.AppendAsFollower(batch(-1, 0, -1, 3)); err != nil {
		t.Fatal(err)
	}
	p.UpdateFollowerHW(3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := waitAck(ctx, w, g); !errors.Is(err, ErrNotLeader) {
		t.Errorf("wait after leader change + truncation: %v, want ErrNotLeader (records at %d..%d were truncated and replaced)", err, res.BaseOffset, res.LastOffset)
	}
	if n := p.AckWatchers(); n != 0 {
		t.Errorf("%d acks=-1 watches left on the partition", n)
	}
}

// TestAckWaitLateISRShrink: records the whole ISR had (HW past them while
// the ISR was large enough) are acknowledged even when the wait is looked
// at only after a later ISR shrink, as Kafka's DelayedProduce completes
// with NONE when the HW passes.
func TestAckWaitLateISRShrink(t *testing.T) {
	c, p := newLeader(t, "memory", Options{MinInsyncReplicas: 2}, 1, 2)
	t0 := c.clock.Now()
	_, w, g := appendLocal(t, p, batch(-1, 0, -1, 3))
	p.UpdateFollowerState(2, 3, t0)
	if hw := p.HighWatermark(); hw != 3 {
		t.Fatalf("HW %d", hw)
	}
	p.MaybeShrinkISR(t0.Add(lag + time.Millisecond))
	if !slices.Equal(p.ISR(), []int32{1}) {
		t.Fatalf("ISR %v", p.ISR())
	}
	if err := waitAck(context.Background(), w, g); err != nil {
		t.Errorf("wait for records committed before the shrink: %v", err)
	}
}

// TestAckWaitOutcomes: how the partition decides a pending watch.
func TestAckWaitOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name string
		do   func(t *testing.T, c *testCluster, p *Partition)
		want error // nil: committed
	}{
		{"committed", func(t *testing.T, c *testCluster, p *Partition) {
			p.UpdateFollowerState(2, 1, c.clock.Now())
		}, nil},
		{"isr shrinks below min.insync", func(t *testing.T, c *testCluster, p *Partition) {
			p.MaybeShrinkISR(c.clock.Now().Add(lag + time.Millisecond))
		}, ErrNotEnoughReplicasAfterAppend},
		{"min.insync raised", func(t *testing.T, c *testCluster, p *Partition) {
			p.SetMinInsyncReplicas(3)
		}, ErrNotEnoughReplicasAfterAppend},
		{"leader lost", func(t *testing.T, c *testCluster, p *Partition) {
			if err := p.MakeFollower(c.state(2, 2, 2)); err != nil {
				t.Fatal(err)
			}
		}, ErrNotLeader},
		{"closed", func(t *testing.T, c *testCluster, p *Partition) {
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
		}, ErrClosed},
		{"timeout", func(t *testing.T, c *testCluster, p *Partition) {}, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, p := newLeader(t, "memory", Options{MinInsyncReplicas: 2}, 1, 2)
			_, w, g := appendLocal(t, p, batch(-1, 0, -1, 1))
			if g.Done() {
				t.Fatalf("decided before anything happened: %v", w.Err())
			}
			tc.do(t, c, p)
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			err := waitAck(ctx, w, g)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("outcome %v, want %v", err, tc.want)
			}
			if n := p.AckWatchers(); n != 0 {
				t.Errorf("%d acks=-1 watches left on the partition", n)
			}
		})
	}
}
