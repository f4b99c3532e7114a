package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replica"
	"github.com/sluice/sluice/server/fetchresp"
	"github.com/sluice/sluice/zerocopy"
)

// newWideServer returns a running Server (not listening) on a memory store
// with one topic "wide" of n partitions, created through the server's
// internals: CreateTopics over the wire would work too, only slower.
func newWideServer(tb testing.TB, n int32) (*Server, *replica.Topic) {
	tb.Helper()
	s := newTestServer(tb, nil, Options{ClusterID: "wide"})
	s.rm.Lock()
	t, err := s.createTopicLocked(topicSpec{name: "wide", partitions: n, rf: 1})
	s.rm.Unlock()
	if err != nil {
		tb.Fatal(err)
	}
	return s, t
}

// oneRecord is a producer's batch of one record.
func oneRecord() []byte {
	return record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]record.BuildRecord{{Value: []byte("wake"), Timestamp: 1}})
}

// wideFetch is a v11 Fetch of every partition of "wide" from its log end.
func wideFetch(t *replica.Topic, maxWait, minBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = -1, maxWait, minBytes, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = t.Name
	rt.Partitions = make([]kmsg.FetchRequestTopicPartition, len(t.Parts))
	for i, p := range t.Parts {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = int32(i), p.LogEndOffset(), 1<<20
		rt.Partitions[i] = rp
	}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	return req
}

// fetch runs handleFetch for req and decodes what the connection would
// have sent. It may run on any goroutine.
func fetch(s *Server, rc *reqCtx, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	resp, err := handleFetch(s, rc, req)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	w := zerocopy.NewWriter(&buf)
	if err := encodeResponse(w, resp); err != nil {
		return nil, err
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	frame := buf.Bytes()
	if size := binary.BigEndian.Uint32(frame); int(size)+4 != len(frame) {
		return nil, fmt.Errorf("frame size %d, %d bytes", size, len(frame))
	}
	out := req.ResponseKind().(*kmsg.FetchResponse)
	out.SetVersion(req.Version)
	return out, out.ReadFrom(frame[8:]) // after size and correlation id
}

// goFetch runs fetch on its own goroutine; the result arrives on the
// returned channel, or the test fails.
func goFetch(t *testing.T, s *Server, rc *reqCtx, req *kmsg.FetchRequest) <-chan *kmsg.FetchResponse {
	res := make(chan *kmsg.FetchResponse, 1)
	errc := make(chan error, 1)
	go func() {
		resp, err := fetch(s, rc, req)
		errc <- err
		res <- resp
	}()
	out := make(chan *kmsg.FetchResponse, 1)
	go func() {
		if err := <-errc; err != nil {
			t.Error(err)
		}
		out <- <-res
	}()
	return out
}

// waitParked waits until n fetches are parked, failing tb after 30 s (a
// bound that tells "parked" from "never parks", not a measure of speed).
func waitParked(tb testing.TB, s *Server, n int64) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for s.parked.Load() != n {
		if time.Now().After(deadline) {
			tb.Fatalf("%d fetches parked after 30 s, want %d", s.parked.Load(), n)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

// checkNoWatchers fails if a partition of t still has a Watch linked.
func checkNoWatchers(tb testing.TB, t *replica.Topic) {
	tb.Helper()
	for i, p := range t.Parts {
		if n := p.Watchers(); n != 0 {
			tb.Fatalf("partition %d: %d watchers left linked", i, n)
		}
	}
}

// TestLongPoll100kPartitions: a fetch over 100,000 partitions (more than
// the 65,536 cases reflect.Select takes) parks, is woken by an append to
// one of them, answers with that record, and leaves nothing registered.
func TestLongPoll100kPartitions(t *testing.T) {
	const n, woken = 100_000, 77_777
	s, tp := newWideServer(t, n)
	res := goFetch(t, s, &reqCtx{}, wideFetch(tp, 60_000, 1))
	waitParked(t, s, 1)
	if _, err := tp.Parts[woken].Append(context.Background(), oneRecord(), 1); err != nil {
		t.Fatal(err)
	}
	resp := <-res
	if resp == nil {
		t.FailNow()
	}
	got := resp.Topics[0].Partitions
	if len(got) != n {
		t.Fatalf("%d partitions answered, want %d", len(got), n)
	}
	for i, p := range got {
		if p.ErrorCode != 0 {
			t.Fatalf("partition %d: %v", i, kerr.ErrorForCode(p.ErrorCode))
		}
		wantHW := int64(0)
		if i == woken {
			wantHW = 1
		}
		if (len(p.RecordBatches) > 0) != (i == woken) || p.HighWatermark != wantHW {
			t.Fatalf("partition %d: %d record bytes, HW %d", i, len(p.RecordBatches), p.HighWatermark)
		}
	}
	if s.parked.Load() != 0 {
		t.Fatal("fetch still counted as parked")
	}
	checkNoWatchers(t, tp)
}

// TestLongPollEnds: however a parked fetch ends, it answers without error
// and unlinks every Watch; a min_bytes of two records is not met by one.
func TestLongPollEnds(t *testing.T) {
	batchLen := int32(len(oneRecord()))
	cases := []struct {
		name     string
		maxWait  int32
		minBytes int32
		end      func(s *Server, tp *replica.Topic, cancel func()) // ends the wait; nil: max wait passes
		records  int                                               // record batches in the answer
	}{
		{name: "append", maxWait: 60_000, minBytes: 1, records: 1, end: func(s *Server, tp *replica.Topic, _ func()) {
			tp.Parts[3].Append(context.Background(), oneRecord(), 1)
		}},
		{name: "min bytes", maxWait: 60_000, minBytes: 2 * batchLen, records: 2, end: func(s *Server, tp *replica.Topic, _ func()) {
			tp.Parts[1].Append(context.Background(), oneRecord(), 1)
			tp.Parts[5].Append(context.Background(), oneRecord(), 1)
		}},
		{name: "max wait", maxWait: 20, minBytes: 1},
		{name: "shutdown", maxWait: 60_000, minBytes: 1, end: func(s *Server, _ *replica.Topic, _ func()) { s.Shutdown() }},
		{name: "client gone", maxWait: 60_000, minBytes: 1, end: func(_ *Server, _ *replica.Topic, cancel func()) { cancel() }},
		{name: "partition closed", maxWait: 60_000, minBytes: 1 << 20, end: func(_ *Server, tp *replica.Topic, _ func()) {
			tp.Parts[2].Close()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, tp := newWideServer(t, 8)
			done := make(chan struct{})
			rc := &reqCtx{conn: &conn{done: done}}
			res := goFetch(t, s, rc, wideFetch(tp, tc.maxWait, tc.minBytes))
			if tc.end != nil {
				waitParked(t, s, 1)
				tc.end(s, tp, func() { close(done) })
			}
			resp := <-res
			if resp == nil {
				t.FailNow()
			}
			records := 0
			for i, p := range resp.Topics[0].Partitions {
				switch {
				case tc.name == "partition closed" && i == 2:
					if p.ErrorCode == 0 {
						t.Fatal("closed partition answered without error")
					}
				case p.ErrorCode != 0:
					t.Fatalf("partition %d: %v", i, kerr.ErrorForCode(p.ErrorCode))
				case len(p.RecordBatches) > 0:
					records++
				}
			}
			if records != tc.records {
				t.Fatalf("%d partitions with records, want %d", records, tc.records)
			}
			if s.parked.Load() != 0 {
				t.Fatal("fetch still counted as parked")
			}
			checkNoWatchers(t, tp)
		})
	}
}

// BenchmarkLongPollWake: one long-polling fetch over n partitions, woken
// by an append to one of them per op; it reads every partition (only the
// woken one has a record) and parks again. wait=purgatory is longPoll;
// wait=reflect is the reflect.Select loop it replaced (longPollReflect),
// run as the baseline. allocs/op counts the append, the wake and the
// read: it must not grow with n. wakes/op counts the reads per append
// (above 1: woken before the record was readable).
func BenchmarkLongPollWake(b *testing.B) {
	impls := []struct {
		name string
		poll func(s *Server, rc *reqCtx, targets [][]fetchTarget, maxWaitMs, minBytes int32, out *fetchresp.Response, fill func() (int64, bool))
	}{
		{"purgatory", func(s *Server, rc *reqCtx, targets [][]fetchTarget, maxWaitMs, minBytes int32, out *fetchresp.Response, fill func() (int64, bool)) {
			s.longPoll(rc, targets, maxWaitMs, minBytes, out, fill, nil)
		}},
		{"reflect", longPollReflect},
	}
	for _, impl := range impls {
		for _, n := range []int32{1, 10, 100} {
			b.Run(fmt.Sprintf("wait=%s/partitions=%d", impl.name, n), func(b *testing.B) {
				s, tp := newWideServer(b, n)
				targets := [][]fetchTarget{make([]fetchTarget, n)}
				out := &fetchresp.Response{Topics: []fetchresp.Topic{{Name: tp.Name, ID: tp.ID, Partitions: make([]fetchresp.Partition, n)}}}
				for i := range targets[0] {
					targets[0][i] = fetchTarget{p: tp.Parts[i], maxBytes: 1 << 20, leaderEpoch: -1}
					out.Topics[0].Partitions[i].Partition = int32(i)
				}
				filled, stop := make(chan int64), make(chan struct{})
				fill := func() (int64, bool) {
					total, hasErr := s.fillFetch(out, targets, 1<<20, 0, -1)
					for i := range targets[0] { // a consumer moves on
						targets[0][i].offset = out.Topics[0].Partitions[i].HighWatermark
					}
					select {
					case filled <- total:
					case <-stop:
					}
					return 0, hasErr // never enough: park again
				}
				done := make(chan struct{})
				go func() {
					impl.poll(s, &reqCtx{}, targets, 3_600_000, 1, out, fill)
					close(done)
				}()
				<-filled
				batch := oneRecord()
				for _, p := range tp.Parts { // warm up: each log's first chunk
					if _, err := p.Append(context.Background(), batch, 1); err != nil {
						b.Fatal(err)
					}
					for <-filled == 0 {
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				wakes := 0
				for i := range b.N {
					if _, err := tp.Parts[i%int(n)].Append(context.Background(), batch, 1); err != nil {
						b.Fatal(err)
					}
					for wakes++; <-filled == 0; wakes++ { // woken too early: it parks again
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(wakes)/float64(b.N), "wakes/op")
				close(stop)
				s.Shutdown()
				<-done
				releaseFetch(out)
			})
		}
	}
}

// longPollReflect is Server.longPoll as it was before the purgatory: one
// reflect.Select case per partition's Changed channel, rebuilt at every
// wake. Kept as BenchmarkLongPollWake's baseline only.
func longPollReflect(s *Server, rc *reqCtx, targets [][]fetchTarget, maxWaitMs, minBytes int32, out *fetchresp.Response, fill func() (total int64, hasErr bool)) {
	deadline := time.Now().Add(time.Duration(maxWaitMs) * time.Millisecond)
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	srvClosing, connDone := rc.closing(s)
	var cases []reflect.SelectCase
	for {
		cases = cases[:0]
		for i := range targets {
			for j := range targets[i] {
				if ft := &targets[i][j]; ft.p != nil && ft.err == nil {
					cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ft.p.Changed())})
				}
			}
		}
		total, hasErr := fill()
		if total >= int64(minBytes) || hasErr || len(cases) == 0 {
			return
		}
		releaseFetch(out)
		nParts := len(cases)
		cases = append(cases,
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)},
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(srvClosing)})
		if connDone != nil {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(connDone)})
		}
		if chosen, _, _ := reflect.Select(cases); chosen >= nParts {
			fill()
			return
		}
	}
}
