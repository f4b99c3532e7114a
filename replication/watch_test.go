package replication

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/sluice/sluice/engine"
)

// woken reports whether w has a wake-up pending, and takes it.
func woken(w *Waiter) bool {
	select {
	case <-w.C():
		return true
	default:
		return false
	}
}

// parkOn prepares, links and arms a Watch of w on p for need bytes.
func parkOn(t *testing.T, p *Partition, w *Waiter, logEnd bool, need int64) *Watch {
	t.Helper()
	n := &Watch{}
	w.Reset()
	n.Prepare(p, w, logEnd)
	n.Link()
	if !w.Arm(need) {
		t.Fatalf("Arm(%d) with nothing credited says do not wait", need)
	}
	t.Cleanup(n.Unlink)
	return n
}

func watchers(p *Partition) (hw, end int) {
	p.hwMu.Lock()
	defer p.hwMu.Unlock()
	return p.hwWatchers.n, p.endWatchers.n
}

// TestWatchWakesOnMinBytes: a consumer's Waiter wakes once the bytes
// passing the high watermark reach what it armed for, not before.
func TestWatchWakesOnMinBytes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		p, _ := newPartition(t, openStore(t, backend), engine.LogConfig{}, Options{})
		one := int64(len(batch(-1, 0, -1, 1)))
		w := NewWaiter()
		parkOn(t, p, w, false, 3*one)
		for i := range 2 {
			appendN(t, p, 1)
			if woken(w) {
				t.Fatalf("woken after %d of 3 batches", i+1)
			}
		}
		appendN(t, p, 1)
		if !woken(w) {
			t.Fatal("not woken after 3 batches")
		}
	})
}

// TestWatchKinds: in a cluster the leader's append wakes a follower's
// Watch (log end) but not a consumer's (HW); the HW moving when a follower
// catches up wakes the consumer's, priced as the bytes it passed.
func TestWatchKinds(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		c, p := newLeader(t, backend, Options{}, 1, 2)
		now := c.clock.Now()
		one := int64(len(batch(-1, 0, -1, 2)))
		consumer, follower := NewWaiter(), NewWaiter()
		parkOn(t, p, consumer, false, 2*one)
		parkOn(t, p, follower, true, 1)
		appendN(t, p, 2)
		if woken(consumer) || !woken(follower) {
			t.Fatal("append: want the follower woken, not the consumer")
		}
		appendN(t, p, 2)
		p.UpdateFollowerState(2, 2, now) // HW 0 -> 2: one batch passes
		if p.HighWatermark() != 2 || woken(consumer) {
			t.Fatalf("HW %d: consumer woken after one of two batches", p.HighWatermark())
		}
		p.UpdateFollowerState(2, 4, now)
		if p.HighWatermark() != 4 || !woken(consumer) {
			t.Fatalf("HW %d: consumer not woken after two batches", p.HighWatermark())
		}
		if hw, end := watchers(p); hw != 1 || end != 1 {
			t.Fatalf("%d HW and %d log-end watchers, want 1 and 1 (woken watches stay linked)", hw, end)
		}
	})
}

// TestWatchWakesOnEvents: changes that are not about bytes wake every
// watcher whatever it armed for; a change between Prepare and Link wakes
// at Link; a closed partition wakes at Link and is not linked.
func TestWatchWakesOnEvents(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		c, p := newLeader(t, backend, Options{}, 1)
		cases := []struct {
			name   string
			change func()
		}{
			{"min.insync.replicas", func() { p.SetMinInsyncReplicas(2) }},
			{"leadership", func() {
				if err := p.MakeFollower(c.state(2, 2, 1, 2)); err != nil {
					t.Fatal(err)
				}
			}},
			{"truncation", func() {
				if err := p.TruncateTo(0); err != nil {
					t.Fatal(err)
				}
			}},
		}
		appendN(t, p, 3)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				consumer, follower := NewWaiter(), NewWaiter()
				parkOn(t, p, consumer, false, 1<<30)
				parkOn(t, p, follower, true, 1<<30)
				tc.change()
				if !woken(consumer) || !woken(follower) {
					t.Fatal("not every watcher woken")
				}
			})
		}
		t.Run("between Prepare and Link", func(t *testing.T) {
			w, n := NewWaiter(), &Watch{}
			n.Prepare(p, w, true)
			if err := p.AppendAsFollower(batchAt(p.LogEndOffset(), 1)); err != nil {
				t.Fatal(err)
			}
			n.Link()
			defer n.Unlink()
			if !woken(w) {
				t.Fatal("an append between Prepare and Link was missed")
			}
		})
		t.Run("close", func(t *testing.T) {
			w := NewWaiter()
			parkOn(t, p, w, false, 1<<30)
			p.Close()
			if !woken(w) {
				t.Fatal("Close did not wake")
			}
			w2, n := NewWaiter(), &Watch{}
			n.Prepare(p, w2, false)
			n.Link()
			if got := woken(w2); !got || n.linked {
				t.Fatalf("Link on a closed partition: woken %v, linked %v", got, n.linked)
			}
		})
	})
}

// batchAt returns a one-batch record set of n records with base offset
// base, as a follower receives it.
func batchAt(base int64, n int) []byte {
	b := batch(-1, 0, -1, n)
	recordBatch(b).SetBaseOffset(base)
	return b
}

// TestArmCountsCreditSinceReset: bytes credited between Reset and Arm (a
// read in progress) count toward what Arm asks for.
func TestArmCountsCreditSinceReset(t *testing.T) {
	p, _ := newPartition(t, openStore(t, "memory"), engine.LogConfig{}, Options{})
	one := int64(len(batch(-1, 0, -1, 1)))
	w, n := NewWaiter(), &Watch{}
	n.Prepare(p, w, false)
	n.Link()
	defer n.Unlink()
	w.Reset()
	appendN(t, p, 1)
	if woken(w) {
		t.Fatal("a credit woke a disarmed waiter")
	}
	if w.Arm(one) {
		t.Fatal("Arm: the credit since Reset covers it, yet it says wait")
	}
	w.Reset()
	appendN(t, p, 1)
	if !w.Arm(2*one) || woken(w) {
		t.Fatal("Arm for two batches after one: want wait, not woken")
	}
	appendN(t, p, 1)
	if !woken(w) {
		t.Fatal("not woken after the second batch")
	}
}

// TestWatchConcurrent: appenders, and fetches that link, arm, wait and
// unlink over several partitions, run together (for -race); every fetch is
// woken and no Watch is left linked.
func TestWatchConcurrent(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	parts := make([]*Partition, 4)
	for i := range parts {
		parts[i], _ = newPartition(t, openStore(t, "memory"), engine.LogConfig{}, Options{Topic: fmt.Sprint("t", i)})
	}
	const fetches, rounds = 8, 50
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // appender: keeps every fetch moving
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := parts[i%len(parts)].Append(ctx, batch(-1, 0, -1, 1), 1); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var fwg sync.WaitGroup
	for f := range fetches {
		need := rng.Int64N(200) + 1
		fwg.Add(1)
		go func() {
			defer fwg.Done()
			w := NewWaiter()
			nodes := make([]Watch, len(parts))
			for i := range nodes {
				nodes[i].Prepare(parts[i], w, f%2 == 0)
			}
			for range rounds {
				w.Reset()
				for i := range nodes {
					nodes[i].Link()
				}
				if w.Arm(need) {
					<-w.C()
				}
			}
			for i := range nodes {
				nodes[i].Unlink()
			}
		}()
	}
	fwg.Wait()
	close(stop)
	wg.Wait()
	for _, p := range parts {
		if hw, end := watchers(p); hw != 0 || end != 0 {
			t.Fatalf("%s: %d HW and %d log-end watchers left linked", p.Topic(), hw, end)
		}
	}
}

// TestByteMarksRing: the ring, which grows by append up to maxByteMarks
// and then wraps, holds the last maxByteMarks marks in push order across
// resets at every fill level, and prices a high-watermark move to a mark's
// end as the bytes appended since the previous move.
func TestByteMarksRing(t *testing.T) {
	for _, pushes := range []int{0, 1, 5, maxByteMarks - 1, maxByteMarks, maxByteMarks + 1, 3*maxByteMarks + 7} {
		t.Run(fmt.Sprintf("pushes=%d", pushes), func(t *testing.T) {
			var m byteMarks
			for round := range 3 { // resets keep the grown ring
				leo := int64(1000 * round)
				m.reset(leo, leo)
				want := []byteMark{{end: leo, bytes: 0}}
				var total int64
				for i := range pushes {
					n := int64(10 + i)
					total += n
					m.push(leo+int64(i+1), n)
					want = append(want, byteMark{end: leo + int64(i+1), bytes: total})
				}
				if len(want) > maxByteMarks {
					want = want[len(want)-maxByteMarks:]
				}
				var got []byteMark
				for i := range int(m.n) {
					got = append(got, m.ring[(int(m.head)+i)%len(m.ring)])
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("round %d: marks %v, want %v", round, got, want)
				}
				if len(m.ring) > maxByteMarks {
					t.Fatalf("round %d: ring of %d marks, at most %d", round, len(m.ring), maxByteMarks)
				}
				if pushes == 0 {
					continue
				}
				// The HW was at the reset point: moving it to the newest
				// mark makes everything since then readable, at least the
				// bytes of the marks still held.
				last := want[len(want)-1]
				n, ok := m.hwMoved(last.end)
				if !ok || n < last.bytes-want[0].bytes {
					t.Fatalf("round %d: hwMoved(%d) = %d, %v; want >= %d, true", round, last.end, n, ok, last.bytes-want[0].bytes)
				}
			}
		})
	}
}
