package tiered

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice/sluice/config"
)

// gateRSM is a store whose index reads wait for gate (nil: none) and
// then fail; it counts the reads asked of it.
type gateRSM struct {
	hookRSM
	gate  chan struct{}
	reads atomic.Int32
}

func (r *gateRSM) FetchIndex(md SegmentMetadata, t IndexType) (io.ReadCloser, error) {
	r.reads.Add(1)
	if r.gate != nil {
		<-r.gate
	}
	return nil, ErrRemoteStorage
}

func (r *gateRSM) FetchLogSegment(md SegmentMetadata, pos int64) (io.ReadCloser, error) {
	r.reads.Add(1)
	return nil, ErrRemoteStorage
}

func newTestReader(rsm RemoteStorageManager, fetchRate int64) *reader {
	m := &Manager{rsm: rsm, log: slog.New(slog.DiscardHandler), now: time.Now, metrics: newRemoteMetrics()}
	m.reader.init(m, &config.Config{RemoteLogFetchMaxBytesPerSec: fetchRate, RemoteLogReaderThreads: 2,
		RemoteFetchMaxWait: time.Hour, RemoteLogIndexCacheBytes: 1 << 20})
	return &m.reader
}

// TestFetchRateCheckedBeforeRead: past
// remote.log.manager.fetch.max.bytes.per.second a fetch of a remote offset
// answers empty without asking the store (Kafka's ReplicaManager checks
// getFetchThrottleTimeMs() before a remote read). Before, the read ran
// and only then waited for the quota: store bandwidth and memory were not
// bounded while throttled.
func TestFetchRateCheckedBeforeRead(t *testing.T) {
	rsm := &gateRSM{}
	r := newTestReader(rsm, 1)
	r.rate.reserve(1 << 20) // the quota is used up for about 12 days
	md := SegmentMetadata{SegmentID: UUID{1}, StartOffset: 0, EndOffset: 9, SizeInBytes: 1000}
	wait := make(chan time.Time) // never: the read is waited for
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := r.read(ctx, wait, md, 0, 1000)
	if err != nil || len(b) != 0 {
		t.Fatalf("throttled fetch: %d bytes, %v; want none and no error", len(b), err)
	}
	if n := rsm.reads.Load(); n != 0 {
		t.Fatalf("throttled fetch asked the store %d times; want none", n)
	}
	r.mu.Lock()
	n := len(r.inflight)
	r.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d reads in flight after a throttled fetch; want none", n)
	}
}

// TestFailedReadNotKeptForever: a read that fails after its fetch stopped
// waiting is kept for a fetch of the same offset to report, but not after
// failTTL: a consumer that moved on leaves no entry behind. Before, the
// entry stayed in inflight until a fetch of that very offset came.
func TestFailedReadNotKeptForever(t *testing.T) {
	rsm := &gateRSM{gate: make(chan struct{})}
	r := newTestReader(rsm, 0)
	r.failTTL = time.Millisecond
	md := SegmentMetadata{SegmentID: UUID{2}, StartOffset: 0, EndOffset: 9, SizeInBytes: 1000}
	over := make(chan time.Time)
	close(over) // the fetch's wait is over at once
	if _, err := r.read(context.Background(), over, md, 0, 1000); err != ErrRemoteFetchBusy {
		t.Fatalf("fetch with the store stuck: %v; want ErrRemoteFetchBusy", err)
	}
	r.mu.Lock()
	op := r.inflight[readKey{md.SegmentID, 0}]
	r.mu.Unlock()
	if op == nil {
		t.Fatal("no read in flight")
	}
	close(rsm.gate) // the store fails the read; nobody fetches offset 0 again
	select {
	case <-op.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the read did not complete")
	}
	if op.err == nil {
		t.Fatal("the read succeeded; want a failure")
	}
	for i := 0; ; i++ {
		r.mu.Lock()
		n, failed := len(r.inflight), r.failed
		r.mu.Unlock()
		if n == 0 && failed == 0 {
			break
		}
		if i == 2000 {
			t.Fatalf("a failed read nobody fetched again kept: %d in flight, %d failed", n, failed)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
