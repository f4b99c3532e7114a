package replication

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/internal/safe"
	"github.com/sluice/sluice/record"
)

var ctx = context.Background()

func TestAppendAssignsDenseOffsets(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		p, _ := newPartition(t, openStore(t, backend), engine.LogConfig{}, Options{Topic: "t", LeaderEpoch: 3})
		cases := []struct {
			name      string
			batches   []byte
			wantFirst int64
			wantLast  int64
		}{
			{"one record", batch(-1, 0, -1, 1), 0, 0},
			{"ten records", batch(-1, 0, -1, 10), 1, 10},
			{"two batches", append(batch(-1, 0, -1, 2), batch(-1, 0, -1, 3)...), 11, 15},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				res, err := p.Append(ctx, tc.batches, 1)
				if err != nil {
					t.Fatal(err)
				}
				if res.BaseOffset != tc.wantFirst || res.LastOffset != tc.wantLast || res.Duplicate || res.LogAppendTime != -1 || res.LogStartOffset != 0 {
					t.Fatalf("got %+v, want offsets %d..%d", res, tc.wantFirst, tc.wantLast)
				}
				if hw := p.HighWatermark(); hw != tc.wantLast+1 {
					t.Fatalf("HW %d, want %d", hw, tc.wantLast+1)
				}
			})
		}
		for _, b := range readAll(t, p) {
			if b.LeaderEpoch() != 3 {
				t.Fatalf("batch at %d has leader epoch %d", b.BaseOffset(), b.LeaderEpoch())
			}
		}
		if le, end := p.EndOffsetForEpoch(3); le != 3 || end != 16 {
			t.Fatalf("EndOffsetForEpoch(3) = %d, %d", le, end)
		}
	})
}

// holdRound makes the next engine append block, starts a first Append that
// runs into it, then starts the requests in more and waits until all are
// queued behind it. release lets everything through.
func holdRound(t *testing.T, p *Partition, cl *countingLog, first []byte, more [][]byte) (results []AppendResult, errs []error, release func()) {
	t.Helper()
	gate := make(chan struct{})
	cl.mu.Lock()
	cl.gate = gate
	cl.mu.Unlock()
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open) // a failed wait must not leave Close blocked
	results = make([]AppendResult, len(more)+1)
	errs = make([]error, len(more)+1)
	var wg sync.WaitGroup
	var finished atomic.Int64 // requests of more that returned already
	start := func(i int, b []byte) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = p.Append(ctx, b, 1)
			if i > 0 {
				finished.Add(1)
			}
		}()
	}
	// Count from here: a test's own setup may have appended already, and
	// the held append must be first's, or another request leads the round.
	before := cl.appends.Load()
	start(0, first)
	waitFor(t, "first append in the engine", func() bool { return cl.appends.Load() > before })
	for i, b := range more {
		start(i+1, b)
	}
	// Requests rejected before queueing (validation) return at once.
	waitFor(t, "requests queued", func() bool { return p.queued()+int(finished.Load()) == len(more) })
	return results, errs, func() { open(); wg.Wait() }
}

// waitFor polls cond, bounded; it asserts nothing about time.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 20000; i++ {
		if cond() {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("gave up waiting for %s", what)
}

func TestAppendCoalesces(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		p, cl := newPartition(t, openStore(t, backend), engine.LogConfig{}, Options{})
		const n = 16
		var more [][]byte
		for i := 0; i < n; i++ {
			more = append(more, batch(int64(100+i), 0, 0, 1+i%3))
		}
		results, errs, release := holdRound(t, p, cl, batch(-1, 0, -1, 5), more)
		release()
		if got := cl.appends.Load(); got != 2 {
			t.Fatalf("%d engine appends for %d requests, want 2 (one held, one coalesced)", got, n+1)
		}
		seen := map[int64]bool{}
		var records int64
		for i, res := range results {
			if errs[i] != nil {
				t.Fatalf("request %d: %v", i, errs[i])
			}
			for o := res.BaseOffset; o <= res.LastOffset; o++ {
				if seen[o] {
					t.Fatalf("offset %d given twice", o)
				}
				seen[o] = true
			}
			records += res.LastOffset - res.BaseOffset + 1
		}
		next := int64(0)
		for _, b := range readAll(t, p) {
			if b.BaseOffset() != next {
				t.Fatalf("batch at %d, want %d: log not dense", b.BaseOffset(), next)
			}
			if pid := b.ProducerID(); pid >= 0 {
				res := results[pid-100+1]
				if res.BaseOffset != b.BaseOffset() || res.LastOffset != b.LastOffset() {
					t.Fatalf("producer %d: result %d..%d, log %d..%d", pid, res.BaseOffset, res.LastOffset, b.BaseOffset(), b.LastOffset())
				}
			}
			next = b.NextOffset()
		}
		if next != records || p.HighWatermark() != records || p.EngineAppends() != 2 {
			t.Fatalf("end %d, HW %d, records %d", next, p.HighWatermark(), records)
		}
	})
}

func TestAppendBadRequestFailsAlone(t *testing.T) {
	corrupt := batch(-1, 0, -1, 1)
	corrupt[len(corrupt)-1] ^= 0xff
	big := batch(-1, 0, -1, 200)
	cases := []struct {
		name    string
		bad     []byte
		prepare func(p *Partition)
		wantErr error
		appends int64 // engine appends after the held one
	}{
		{"corrupt", corrupt, nil, record.ErrCorrupt, 1},
		{"control batch", func() []byte {
			return record.AppendEndTxnMarker(nil, record.MarkerOptions{ProducerID: 9}, record.EndTxnMarker{Type: record.ControlCommit})
		}(), nil, ErrTransactional, 1},
		{"transactional without producer id", func() []byte {
			return record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, BaseSequence: -1, Attributes: record.TransactionalBit}, []record.BuildRecord{{Value: []byte("x")}})
		}(), nil, ErrTransactional, 1},
		{"out of order", batch(7, 0, 5, 1), func(p *Partition) {
			if _, err := p.Append(ctx, batch(7, 0, 0, 1), 1); err != nil {
				t.Fatal(err)
			}
		}, ErrOutOfOrderSequence, 1},
		// The engine rejects the coalesced round; each request is retried.
		{"too large for the engine", big, nil, engine.ErrBatchTooLarge, 1 + 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, backend string) {
				p, cl := newPartition(t, openStore(t, backend), engine.LogConfig{MaxBatchBytes: 1000}, Options{})
				if tc.prepare != nil {
					tc.prepare(p)
				}
				before := cl.appends.Load()
				good := [][]byte{batch(1, 0, 0, 1), tc.bad, batch(2, 0, 0, 2), batch(-1, 0, -1, 3)}
				results, errs, release := holdRound(t, p, cl, batch(-1, 0, -1, 1), good)
				release()
				for i := range results {
					if i == 2 {
						if !errors.Is(errs[i], tc.wantErr) {
							t.Fatalf("bad request: err %v, want %v", errs[i], tc.wantErr)
						}
						continue
					}
					if errs[i] != nil {
						t.Fatalf("request %d failed with the bad one: %v", i, errs[i])
					}
				}
				if got := cl.appends.Load() - before - 1; got != tc.appends {
					t.Fatalf("%d engine appends after the held one, want %d", got, tc.appends)
				}
				if end := p.LogEndOffset(); end != readAll(t, p)[len(readAll(t, p))-1].NextOffset() || p.HighWatermark() != end {
					t.Fatalf("HW %d end %d", p.HighWatermark(), end)
				}
			})
		})
	}
}

func TestReadNeverPastHighWatermark(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		p, cl := newPartition(t, openStore(t, backend), engine.LogConfig{}, Options{})
		if _, err := p.Append(ctx, batch(-1, 0, -1, 4), 1); err != nil {
			t.Fatal(err)
		}
		checked := false
		cl.mu.Lock()
		cl.during = func() {
			// The engine has the new batch; the partition has not yet
			// advanced its HW, so a consumer must not see it.
			if p.LogEndOffset() != 6 || p.HighWatermark() != 4 {
				t.Errorf("inside append: end %d HW %d", p.LogEndOffset(), p.HighWatermark())
			}
			sl, err := p.Read(4, 1<<20)
			if err != nil || sl.Len() != 0 {
				t.Errorf("Read(4) inside append: %d bytes, %v", sl.Len(), err)
			}
			sl.Release()
			sl, err = p.Read(0, 1<<20)
			if err != nil || sl.Len() == 0 {
				t.Errorf("Read(0) inside append: %d bytes, %v", sl.Len(), err)
			}
			if buf, _ := sl.AppendTo(nil); len(buf) > 0 && record.Batch(buf).NextOffset() > 4 {
				t.Errorf("Read(0) returned a batch ending at %d", record.Batch(buf).NextOffset())
			}
			sl.Release()
			if _, _, ok, _ := p.OffsetForTimestamp(5000); ok {
				t.Errorf("OffsetForTimestamp found a record at/after the HW")
			}
			checked = true
		}
		cl.mu.Unlock()
		late := record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, BaseSequence: -1},
			[]record.BuildRecord{{Value: []byte("a"), Timestamp: 5000}, {Value: []byte("b"), Timestamp: 5001}})
		if _, err := p.Append(ctx, late, 1); err != nil {
			t.Fatal(err)
		}
		if !checked {
			t.Fatal("hook did not run")
		}
		sl, err := p.Read(4, 1<<20)
		if err != nil || sl.Len() == 0 {
			t.Fatalf("Read(4) after append: %d bytes, %v", sl.Len(), err)
		}
		sl.Release()
		if off, _, ok, err := p.OffsetForTimestamp(5000); !ok || off != 4 || err != nil {
			t.Fatalf("OffsetForTimestamp(5000) after append: %d %v %v", off, ok, err)
		}
	})
}

func TestChangedClosesOnAppend(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		p, _ := newPartition(t, openStore(t, backend), engine.LogConfig{}, Options{})
		ch := p.Changed()
		if ch != p.Changed() {
			t.Fatal("Changed returned a new channel with nothing changed")
		}
		select {
		case <-ch:
			t.Fatal("closed before any append")
		default:
		}
		if _, err := p.Append(ctx, batch(-1, 0, -1, 1), 0); err != nil {
			t.Fatal(err)
		}
		<-ch // closed by the append, or the test hangs
		ch2 := p.Changed()
		if ch2 == ch {
			t.Fatal("same channel after a change")
		}
		p.Close()
		<-ch2 // closed by Close
		if _, err := p.Append(ctx, batch(-1, 0, -1, 1), 1); !errors.Is(err, ErrClosed) {
			t.Fatalf("append after close: %v", err)
		}
		if err := p.Close(); err != nil {
			t.Fatalf("second close: %v", err)
		}
	})
}

func TestAcksAllWaitsForFlush(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		p, cl := newPartition(t, openStore(t, backend), engine.LogConfig{FlushMessages: 1}, Options{FlushEveryAppend: true})
		cl.mu.Lock()
		cl.onFlush = func() {
			if hw, end := p.HighWatermark(), p.LogEndOffset(); hw >= end {
				t.Errorf("HW %d already at end %d before the flush", hw, end)
			}
		}
		cl.mu.Unlock()
		for i, acks := range []int16{-1, 1, 0, -1} {
			res, err := p.Append(ctx, batch(-1, 0, -1, 2), acks)
			if err != nil {
				t.Fatal(err)
			}
			if p.HighWatermark() <= res.LastOffset {
				t.Fatalf("acks=%d returned with HW %d <= last offset %d", acks, p.HighWatermark(), res.LastOffset)
			}
			if got := cl.flushes.Load(); got != int64(i+1) {
				t.Fatalf("%d flushes after %d appends", got, i+1)
			}
		}
	})
}

func TestAcksAllContextDone(t *testing.T) {
	p, _ := newPartition(t, openStore(t, "memory"), engine.LogConfig{}, Options{})
	c, cancel := context.WithCancel(ctx)
	cancel()
	// Single node: the HW passes the append at once, so even a done
	// context gets the result.
	if _, err := p.Append(c, batch(-1, 0, -1, 1), -1); err != nil {
		t.Fatal(err)
	}
	// A waiter for an offset the HW never reaches is released by ctx.
	if err := p.waitHW(c, 100); !errors.Is(err, context.Canceled) {
		t.Fatalf("waitHW: %v", err)
	}
}

func TestLogAppendTime(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	p, _ := newPartition(t, openStore(t, "memory"), engine.LogConfig{}, Options{LogAppendTime: true, Now: func() time.Time { return now }})
	res, err := p.Append(ctx, batch(-1, 0, -1, 2), 1)
	if err != nil || res.LogAppendTime != now.UnixMilli() {
		t.Fatalf("res %+v err %v", res, err)
	}
	if b := readAll(t, p)[0]; !b.LogAppendTime() || b.MaxTimestamp() != now.UnixMilli() {
		t.Fatalf("batch not marked LogAppendTime: %d", b.MaxTimestamp())
	}
	p.SetLogAppendTime(false)
	if res, _ := p.Append(ctx, batch(-1, 0, -1, 1), 1); res.LogAppendTime != -1 {
		t.Fatalf("LogAppendTime %d after switching off", res.LogAppendTime)
	}
}

func TestDeleteRecordsBefore(t *testing.T) {
	p, _ := newPartition(t, openStore(t, "memory"), engine.LogConfig{}, Options{})
	for i := 0; i < 3; i++ {
		if _, err := p.Append(ctx, batch(-1, 0, -1, 2), 1); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name    string
		offset  int64
		want    int64
		wantErr error
	}{
		{"to a batch boundary", 2, 2, nil},
		{"above HW", 7, -1, engine.ErrOffsetOutOfRange},
		{"HW", -1, 6, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			low, err := p.DeleteRecordsBefore(tc.offset)
			if !errors.Is(err, tc.wantErr) || (err == nil && low != tc.want) {
				t.Fatalf("got %d, %v; want %d, %v", low, err, tc.want, tc.wantErr)
			}
		})
	}
	if res, err := p.Append(ctx, batch(-1, 0, -1, 1), 1); err != nil || res.LogStartOffset != 6 {
		t.Fatalf("res %+v err %v", res, err)
	}
}

// TestAppendSurvivesPanic: a panic inside an append round (a backend bug)
// fails the requests of that round with an error, undoes their producer
// state, and the partition keeps appending.
func TestAppendSurvivesPanic(t *testing.T) {
	st := openStore(t, "memory")
	p, cl := newPartition(t, st, engine.LogConfig{}, Options{Topic: "t"})
	cl.mu.Lock()
	cl.panics = 1
	cl.mu.Unlock()
	_, err := p.Append(context.Background(), batch(7, 0, 0, 2), 1)
	if !errors.Is(err, safe.ErrPanic) {
		t.Fatalf("append during a panic: %v", err)
	}
	// The producer's sequence 0 was not recorded: the retry is accepted.
	res, err := p.Append(context.Background(), batch(7, 0, 0, 2), 1)
	if err != nil || res.Duplicate {
		t.Fatalf("retry after the panic: %+v, %v", res, err)
	}
	if _, err := p.Append(context.Background(), batch(7, 0, 2, 1), 1); err != nil {
		t.Fatalf("next append: %v", err)
	}
}

// TestAppendPanicAfterEngineAppend: a panic after the engine append wrote
// the round fails its requests, but the records are in the log, so the
// partition's state follows the log, not the failed round: the producer
// state describes the written batch (the producer's retry is a duplicate
// with the original offsets, its next sequence is accepted) and the high
// watermark covers it.
func TestAppendPanicAfterEngineAppend(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		st := openStore(t, backend)
		p, cl := newPartition(t, st, engine.LogConfig{}, Options{Topic: "t"})
		if _, err := p.Append(ctx, batch(7, 0, 0, 1), 1); err != nil {
			t.Fatal(err)
		}
		cl.mu.Lock()
		cl.during = func() {
			cl.mu.Lock()
			cl.during = nil
			cl.mu.Unlock()
			panic("countingLog: injected panic after the append")
		}
		cl.mu.Unlock()
		if _, err := p.Append(ctx, batch(7, 0, 1, 2), 1); !errors.Is(err, safe.ErrPanic) {
			t.Fatalf("append during a panic: %v", err)
		}
		if end := p.LogEndOffset(); end != 3 {
			t.Fatalf("log end %d after the panic, want 3 (the batch was written)", end)
		}
		if hw := p.HighWatermark(); hw != 3 {
			t.Errorf("high watermark %d after the panic, want 3 (the log end)", hw)
		}
		res, err := p.Append(ctx, batch(7, 0, 1, 2), 1)
		if err != nil || !res.Duplicate || res.BaseOffset != 1 || res.LastOffset != 2 {
			t.Fatalf("retry after the panic: %+v, %v; want a duplicate at 1-2", res, err)
		}
		if res, err := p.Append(ctx, batch(7, 0, 3, 1), 1); err != nil || res.BaseOffset != 3 {
			t.Fatalf("next append: %+v, %v", res, err)
		}
		if got := len(readAll(t, p)); got != 3 {
			t.Errorf("%d batches in the log, want 3", got)
		}
	})
}
