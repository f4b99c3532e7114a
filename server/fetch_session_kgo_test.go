package server_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

// fetchBytes counts a client's Fetch requests and the bytes of them
// written and of their answers read (kgo hooks; frames with their size).
type fetchBytes struct {
	reqs, written, read atomic.Int64

	mu    sync.Mutex
	sizes []int // of each request written
}

func (f *fetchBytes) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, _ error) {
	if key == 1 {
		f.reqs.Add(1)
		f.written.Add(int64(n))
		f.mu.Lock()
		f.sizes = append(f.sizes, n)
		f.mu.Unlock()
	}
}

func (f *fetchBytes) OnBrokerRead(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, _ error) {
	if key == 1 {
		f.read.Add(int64(n))
	}
}

// take returns the counts since the last take, and the median request.
func (f *fetchBytes) take() (reqs, written, read int64, median int) {
	f.mu.Lock()
	slices.Sort(f.sizes)
	if len(f.sizes) > 0 {
		median = f.sizes[len(f.sizes)/2]
	}
	f.sizes = f.sizes[:0]
	f.mu.Unlock()
	return f.reqs.Swap(0), f.written.Swap(0), f.read.Swap(0), median
}

// sessionRun is what one consumer run measured.
type sessionRun struct {
	consumeReqs, consumeWritten, consumeRead int64 // reading the n records
	idleReqs, idleWritten, idleRead          int64 // polling for idle (one record appended)
	consumeMedian, idleMedian                int   // request sizes
}

// consumeWide produces one record to each of n partitions of a new topic
// and consumes them with a kgo consumer (broker with sessions or without),
// checking every record arrives once; then it polls for idle while one
// more record is appended, and checks that arrives too.
func consumeWide(t *testing.T, n int32, sessions bool, idle time.Duration) sessionRun {
	b := brokertest.Start(t, "memory", func(c *config.Config) {
		if !sessions {
			c.FetchSessionCacheSlots = 0
		}
	})
	const topic = "wide"
	prod := newClient(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, kadm.NewClient(prod), topic, n, nil)
	ctx := testCtx(t, 120*time.Second)
	recs := make([]*kgo.Record, n)
	for p := range n {
		recs[p] = &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "p%d", p)}
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	var fb fetchBytes
	cons := newClient(t, b.Addr(), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond), kgo.WithHooks(&fb))
	seen := make([]int, n)
	got := 0
	poll := func(ctx context.Context) {
		fs := cons.PollFetches(ctx)
		fs.EachError(func(tp string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				t.Errorf("%s/%d: %v", tp, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if want := fmt.Sprintf("p%d", r.Partition); string(r.Value) != want && string(r.Value) != "late" {
				t.Errorf("partition %d offset %d: %q", r.Partition, r.Offset, r.Value)
			}
			seen[r.Partition]++
			got++
		})
	}
	for got < int(n) && ctx.Err() == nil {
		poll(ctx)
	}
	var run sessionRun
	run.consumeReqs, run.consumeWritten, run.consumeRead, run.consumeMedian = fb.take()

	// Idle polling, and one record late in it.
	idleCtx, cancel := context.WithTimeout(ctx, idle)
	defer cancel()
	go func() {
		time.Sleep(idle / 2)
		prod.Produce(ctx, &kgo.Record{Topic: topic, Partition: n / 2, Value: []byte("late")}, nil)
	}()
	for idleCtx.Err() == nil {
		poll(idleCtx)
	}
	run.idleReqs, run.idleWritten, run.idleRead, run.idleMedian = fb.take()
	for p, c := range seen {
		want := 1
		if int32(p) == n/2 {
			want = 2
		}
		if c != want {
			t.Fatalf("partition %d: %d records, want %d", p, c, want)
		}
	}
	return run
}

// TestFetchSessionKgoConsumer: a kgo consumer of many partitions consumes
// every record with sessions on and off, and logs the Fetch bytes per
// request each way. With sessions an idle poll names no partitions, so its
// requests must be far smaller than the full ones (a size check, not a
// timing one).
func TestFetchSessionKgoConsumer(t *testing.T) {
	t.Parallel()
	for _, n := range []int32{500, 5000} {
		if n > 500 && testing.Short() {
			continue
		}
		var runs [2]sessionRun
		for i, sessions := range []bool{true, false} {
			t.Run(fmt.Sprintf("partitions=%d/sessions=%v", n, sessions), func(t *testing.T) {
				runs[i] = consumeWide(t, n, sessions, 2*time.Second)
				r := runs[i]
				t.Logf("partitions=%d sessions=%v: consuming: %d fetches, %d B written (median request %d B), %d B read; "+
					"idle: %d fetches, %d B written (median request %d B), %d B read (%d B/response)",
					n, sessions, r.consumeReqs, r.consumeWritten, r.consumeMedian, r.consumeRead,
					r.idleReqs, r.idleWritten, r.idleMedian, r.idleRead, r.idleRead/max(r.idleReqs, 1))
			})
		}
		on, off := runs[0], runs[1]
		if on.idleMedian*10 > off.idleMedian {
			t.Errorf("partitions=%d: idle fetch requests %d B (median) with sessions, %d without", n, on.idleMedian, off.idleMedian)
		}
	}
}
