package tiered

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replica"
	"github.com/sluice/sluice/segment"
	"github.com/sluice/sluice/zerocopy"
)

// ErrRemoteFetchBusy: the remote read of a fetch did not complete within
// remote.fetch.max.wait.ms (readers busy, a slow or stopped store); the
// fetch answers no records for the partition and the client fetches
// again. The read goes on and its batches are cached for that next fetch.
var ErrRemoteFetchBusy = errors.New("tiered: remote read in progress")

// reader serves fetches from the remote tier, as Kafka's
// RemoteLogReader pool: a read runs on its own goroutine, at most
// remote.log.reader.threads of them reading at once, while the fetch
// waits for it at most remote.fetch.max.wait.ms; the connection that
// asked, and every other fetch, never waits longer. One read of a
// segment at an offset is in flight at a time: fetches of the same
// offset join it. A read that fails after its fetch stopped waiting is
// kept until the next fetch of that offset, which answers its error
// (KAFKA_STORAGE_ERROR, retriable) rather than starting a read that could
// again outlast the wait: a consumer of a stopped store hears of it. A
// failure is kept remote.fetch.max.wait.ms times ten (at least 10s) at
// most, and at most 1024 of them, so that consumers that moved on leave
// none behind. Each read holds at most the fetch's partition bytes, so
// memory is bounded by the reader count times the largest fetch, plus the
// cache (cache.go) of offset indexes and read chunks bounded by
// remote.log.index.file.cache.total.size.bytes. Past
// remote.log.manager.fetch.max.bytes.per.second no read starts: the fetch
// answers the partition empty until the quota allows (Kafka's fetch
// throttle).
type reader struct {
	m       *Manager
	slots   chan struct{}
	maxWait time.Duration
	rate    *rate
	cache   *cache

	mu       sync.Mutex
	inflight map[readKey]*readOp
	// failed counts the failed reads kept in inflight for a fetch to
	// report; each goes after failTTL, and past maxFailedReads a
	// failure is not kept: a consumer that moved on leaves none for
	// good.
	failed  int
	failTTL time.Duration
}

// maxFailedReads bounds the failed reads kept for a later fetch.
const maxFailedReads = 1024

// readKey names a read in flight.
type readKey struct {
	id     UUID
	offset int64
}

// readOp is a read in flight; done is closed once b and err are set.
type readOp struct {
	done chan struct{}
	b    []byte
	err  error
	kept bool // a failure counted in reader.failed; guarded by reader.mu
}

// dropFailed removes op, a failed read, from inflight when it is still
// there. REQUIRES: r.mu held.
func (r *reader) dropFailed(k readKey, op *readOp) {
	if r.inflight[k] == op {
		delete(r.inflight, k)
	}
	if op.kept {
		op.kept = false
		r.failed--
	}
}

func (r *reader) init(m *Manager, c *config.Config) {
	r.m = m
	n := max(c.RemoteLogReaderThreads, 1)
	r.slots = make(chan struct{}, n)
	r.maxWait = c.RemoteFetchMaxWait
	if r.maxWait <= 0 {
		r.maxWait = 500 * time.Millisecond
	}
	r.rate = newRate(c.RemoteLogFetchMaxBytesPerSec)
	r.cache = newCache(c.RemoteLogIndexCacheBytes)
	r.inflight = map[readKey]*readOp{}
	// Long enough for the consumer's next fetch (it retries within its
	// fetch.max.wait.ms plus backoff).
	r.failTTL = max(10*r.maxWait, 10*time.Second)
}

// forget drops what is cached of a deleted segment.
func (r *reader) forget(id UUID) { r.cache.forget(id) }

func (r *reader) offsetIndex(md SegmentMetadata) ([]byte, error) {
	idx, err := r.index(md, IndexOffset)
	return idx[:len(idx)/8*8], err
}

// index returns index t (IndexOffset or IndexTransaction) of md, from the
// cache or the store.
func (r *reader) index(md SegmentMetadata, t IndexType) ([]byte, error) {
	if idx, ok := r.cache.getIndex(md.SegmentID, t); ok {
		return idx, nil
	}
	rc, err := r.m.rsm.FetchIndex(md, t)
	if err != nil {
		return nil, err
	}
	idx, err := io.ReadAll(io.LimitReader(rc, 64<<20))
	rc.Close()
	if err != nil {
		return nil, fmt.Errorf("%w: read index %d: %v", ErrRemoteStorage, t, err)
	}
	r.cache.putIndex(md.SegmentID, t, idx)
	return idx, nil
}

// read returns batches of md from the one holding offset on, up to
// maxBytes (at least one): from the cache, else from the read in flight
// at that offset or a new one, waiting for it until wait is over
// (ErrRemoteFetchBusy) or ctx is done.
func (r *reader) read(ctx context.Context, wait <-chan time.Time, md SegmentMetadata, offset int64, maxBytes int) ([]byte, error) {
	if b, ok := r.cache.chunk(md.SegmentID, offset, maxBytes); ok && len(b) > 0 {
		return b, nil
	}
	k := readKey{md.SegmentID, offset}
	r.mu.Lock()
	op := r.inflight[k]
	if op != nil {
		select {
		case <-op.done:
			// A read that failed after its fetch stopped waiting: this
			// fetch reports it (the consumer retries), then it goes.
			r.dropFailed(k, op)
			r.mu.Unlock()
			return nil, op.err
		default:
		}
	}
	if op == nil && r.rate.throttled() {
		// Over remote.log.manager.fetch.max.bytes.per.second: no read
		// starts, the partition answers empty and the consumer fetches
		// again, as Kafka's ReplicaManager with
		// RemoteLogManager.getFetchThrottleTimeMs() > 0. Checked before
		// the read, so that neither store bandwidth nor memory grow
		// while throttled.
		r.mu.Unlock()
		return nil, nil
	}
	if op == nil {
		op = &readOp{done: make(chan struct{})}
		r.inflight[k] = op
		go r.run(k, op, md, offset, maxBytes)
	}
	r.mu.Unlock()
	select {
	case <-op.done:
	case <-wait:
		return nil, ErrRemoteFetchBusy
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if op.err != nil {
		r.mu.Lock()
		r.dropFailed(k, op) // reported here
		r.mu.Unlock()
		return nil, op.err
	}
	return sliceBatches(op.b, offset, maxBytes), nil
}

// run performs one read on a reader slot and caches what it read.
func (r *reader) run(k readKey, op *readOp, md SegmentMetadata, offset int64, maxBytes int) {
	r.slots <- struct{}{}
	op.b, op.err = r.readBatches(md, offset, maxBytes, -1)
	if op.err == nil && !md.TxnIndexEmpty {
		// Fetched here so that Read finds it cached.
		_, op.err = r.index(md, IndexTransaction)
	}
	<-r.slots
	if op.err == nil {
		r.rate.reserve(int64(len(op.b))) // counted: reads after it wait their turn (read)
		r.cache.putChunk(md.SegmentID, op.b)
	}
	r.m.metrics.fetched(md.Partition.Topic, int64(len(op.b)), op.err)
	r.mu.Lock()
	switch {
	case op.err == nil:
		delete(r.inflight, k)
	case r.failed >= maxFailedReads:
		op.b = nil
		delete(r.inflight, k) // too many kept: its fetch, if waiting, reports it
	default:
		// Kept until a fetch of k reports it (read), for failTTL at most.
		op.b = nil
		op.kept = true
		r.failed++
		time.AfterFunc(r.failTTL, func() {
			r.mu.Lock()
			r.dropFailed(k, op)
			r.mu.Unlock()
		})
	}
	r.mu.Unlock()
	close(op.done)
}

// lookup returns the position of the greatest index entry at or below
// offset (0 when none), as Kafka's OffsetIndex.lookup. Entries are
// (offset - base int32, position int32), big-endian, ascending.
func lookup(idx []byte, base, offset int64) int64 {
	n := len(idx) / 8
	i := sort.Search(n, func(i int) bool {
		return base+int64(int32(binary.BigEndian.Uint32(idx[i*8:]))) > offset
	})
	if i == 0 {
		return 0
	}
	return int64(int32(binary.BigEndian.Uint32(idx[(i-1)*8+4:])))
}

// LogStart returns the partition's log start offset counting the remote
// tier (Kafka's logStartOffset) and its local log start. On a tiered
// partition it is the log start the partition keeps with its log
// (replication.Partition.LogStart: persisted in log-start-offset-checkpoint
// on every replica, raised by DeleteRecords, remote retention and a
// follower's fetches, kept by local retention), raised to the first offset
// still held, remote or local: records below it are gone everywhere.
func (m *Manager) LogStart(t *replica.Topic, p *replica.Partition) (start, local int64, err error) {
	local = p.LogStartOffset()
	if !m.TopicTiering(t).Enable {
		return local, local, nil
	}
	rs, err := m.remote(m.partitionOf(t, p.Index()))
	if err != nil {
		return local, local, err
	}
	start, err = logStartOf(p, &rs)
	return start, local, err
}

// logStartOf is LogStart of tiered partition p whose finished remote
// segments rs summarizes.
func logStartOf(p *replica.Partition, rs *remoteState) (int64, error) {
	local := p.LogStartOffset()
	held := local
	if rs.start >= 0 && rs.start < local {
		held = rs.start
	}
	if p.LogStartUnknown() {
		// The log lost its checkpointed log start (a damaged or missing
		// log-start-offset-checkpoint): the remote tier's first record
		// is the safe answer (Kafka reads 0, raised by the remote log
		// manager); never the local start, which would make remote
		// retention delete what is below it. Settled durably once
		// something remote is known (not while the cluster's metadata
		// view may still lack it).
		if rs.start >= 0 && rs.start < local {
			if err := p.ResolveLogStart(rs.start); err != nil {
				return local, err
			}
		}
		return held, nil
	}
	if rs.start < 0 {
		// Nothing remote, as far as the metadata shows: either all of
		// it was deleted, which raised the kept log start to the local
		// one first (remoteRetention), or nothing was ever copied (the
		// topic-based view is ready and empty only when the controller
		// knows no __remote_log_metadata: tiered/topicmeta.go): the kept
		// log start stands.
		return p.LogStart(), nil
	}
	return max(p.LogStart(), held), nil
}

// DeleteRecords moves the log start offset of tiered partition p to
// offset, after its local log applied the DeleteRecords (which moved it
// already when offset is at or above the local log start; below, the
// local log is untouched), and returns the new log start. The partition
// keeps it durably (replication.Partition.RaiseLogStart), its followers
// take it from their fetch answers, and it survives a restart or a leader
// change: fetches below it are OFFSET_OUT_OF_RANGE, ListOffsets -2 answers
// it, and the task deletes the remote segments wholly below it
// (remoteRetention), as Kafka's RLMExpirationTask. Below the current start
// it changes nothing. Of a topic not tiered it returns the local log
// start.
func (m *Manager) DeleteRecords(t *replica.Topic, p *replica.Partition, offset int64) (int64, error) {
	start, local, err := m.LogStart(t, p)
	if err != nil || !m.TopicTiering(t).Enable {
		return local, err
	}
	if offset <= start {
		return start, nil
	}
	// At or above the local start this drops the log start kept below it.
	if err := p.RaiseLogStart(offset); err != nil {
		return -1, err
	}
	start, _, err = m.LogStart(t, p)
	return start, err
}

// RemoteEnd returns the offset after the last remote record (Kafka's
// highestOffsetInRemoteStorage + 1), and false when nothing is remote.
func (m *Manager) RemoteEnd(t *replica.Topic, p *replica.Partition) (int64, bool, error) {
	if !m.TopicTiering(t).Enable {
		return 0, false, nil
	}
	rs, err := m.remote(m.partitionOf(t, p.Index()))
	if err != nil || rs.end < 0 {
		return 0, false, err
	}
	return rs.end, true, nil
}

// Read reads whole batches from the remote segment holding offset, at most
// maxBytes of them but at least one (KIP-74), none ending at or after upTo
// (< 0: no bound); it returns the bytes and the aborted transactions of
// the remote transaction index overlapping them (for read_committed). An
// offset no remote segment holds gives engine.ErrOffsetOutOfRange; damaged
// metadata or a missing object an error wrapping ErrCorruptMetadata,
// ErrRemoteNotFound or ErrRemoteStorage (a storage error the client
// retries); readers busy past remote.fetch.max.wait.ms ErrRemoteFetchBusy.
func (m *Manager) Read(ctx context.Context, t *replica.Topic, p *replica.Partition, offset int64, maxBytes int, upTo int64) (zerocopy.Slice, []engine.AbortedTxn, error) {
	rs, err := m.remote(m.partitionOf(t, p.Index()))
	if err != nil {
		return zerocopy.Slice{}, nil, err
	}
	i := sort.Search(len(rs.segs), func(i int) bool { return rs.segs[i].EndOffset >= offset })
	if i == len(rs.segs) || rs.segs[i].StartOffset > offset {
		return zerocopy.Slice{}, nil, fmt.Errorf("%w: offset %d is in no remote segment", engine.ErrOffsetOutOfRange, offset)
	}
	md := rs.segs[i]
	timer := time.NewTimer(m.reader.maxWait)
	defer timer.Stop()
	b, err := m.reader.read(ctx, timer.C, md, offset, maxBytes)
	if err != nil || len(b) == 0 {
		return zerocopy.Slice{}, nil, err
	}
	// Remote segments lie wholly below the high watermark and the last
	// stable offset when they are copied: upTo cuts nothing of them
	// unless the log was truncated below them since.
	if upTo >= 0 {
		b = batchesBelow(b, upTo)
		if len(b) == 0 {
			return zerocopy.Slice{}, nil, nil
		}
	}
	var aborted []engine.AbortedTxn
	if !md.TxnIndexEmpty {
		last := record.Batch(lastBatch(b)).LastOffset()
		if aborted, err = m.reader.abortedTxns(md, offset, last+1); err != nil {
			return zerocopy.Slice{}, nil, err
		}
	}
	return zerocopy.BytesSlice(b), aborted, nil
}

// batchesBelow returns the leading batches of b that end below upTo.
func batchesBelow(b []byte, upTo int64) []byte {
	end := 0
	for end+record.HeaderSize <= len(b) {
		bt := record.Batch(b[end:])
		if bt.NextOffset() > upTo {
			break
		}
		end += bt.Size()
	}
	return b[:end]
}

func lastBatch(b []byte) []byte {
	var last []byte
	for len(b) >= record.HeaderSize {
		n := record.Batch(b).Size()
		last, b = b[:n], b[n:]
	}
	return last
}

// readBatches reads the batches from the one holding offset.
func (r *reader) readBatches(md SegmentMetadata, offset int64, maxBytes int, upTo int64) ([]byte, error) {
	idx, err := r.offsetIndex(md)
	if err != nil {
		return nil, err
	}
	pos := lookup(idx, md.StartOffset, offset)
	if pos < 0 || pos > md.SizeInBytes {
		return nil, fmt.Errorf("%w: segment %s: index position %d past size %d", ErrRemoteStorage, md.SegmentID, pos, md.SizeInBytes)
	}
	rc, err := r.m.rsm.FetchLogSegment(md, pos)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	left := md.SizeInBytes - pos
	var hdr [record.HeaderSize]byte
	var out []byte
	for left >= record.HeaderSize {
		if _, err := io.ReadFull(rc, hdr[:record.LogOverhead]); err != nil {
			return nil, fmt.Errorf("%w: segment %s at %d: %v", ErrRemoteStorage, md.SegmentID, md.SizeInBytes-left, err)
		}
		b := record.Batch(hdr[:])
		size := int64(b.Size())
		if size < record.HeaderSize || size > left {
			return nil, fmt.Errorf("%w: segment %s at %d: batch of %d bytes with %d left", ErrRemoteStorage, md.SegmentID, md.SizeInBytes-left, size, left)
		}
		left -= size
		if len(out) > 0 && len(out)+int(size) > maxBytes {
			break
		}
		// The batch's header, then its body: its last offset is in the
		// header past LogOverhead.
		if _, err := io.ReadFull(rc, hdr[record.LogOverhead:]); err != nil {
			return nil, fmt.Errorf("%w: segment %s: %v", ErrRemoteStorage, md.SegmentID, err)
		}
		if upTo >= 0 && b.NextOffset() > upTo {
			break
		}
		if b.LastOffset() < offset {
			if _, err := io.CopyN(io.Discard, rc, size-record.HeaderSize); err != nil {
				return nil, fmt.Errorf("%w: segment %s: %v", ErrRemoteStorage, md.SegmentID, err)
			}
			continue
		}
		start := len(out)
		out = append(out, make([]byte, size)...)
		copy(out[start:], hdr[:])
		if _, err := io.ReadFull(rc, out[start+record.HeaderSize:]); err != nil {
			return nil, fmt.Errorf("%w: segment %s: %v", ErrRemoteStorage, md.SegmentID, err)
		}
		if len(out) >= maxBytes {
			break
		}
	}
	return out, nil
}

// abortedTxns returns the entries of the segment's remote transaction
// index overlapping [from, upTo).
func (r *reader) abortedTxns(md SegmentMetadata, from, upTo int64) ([]engine.AbortedTxn, error) {
	b, err := r.index(md, IndexTransaction)
	if errors.Is(err, ErrRemoteNotFound) {
		// Optional: none for a segment without aborted transactions
		// (Kafka's RemoteIndexCache makes an empty one).
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	entries, _ := segment.DecodeTxnIndex(b)
	var out []engine.AbortedTxn
	for _, e := range entries {
		if e.LastOffset >= from && e.FirstOffset < upTo {
			out = append(out, e)
		}
	}
	return out, nil
}

// OffsetForTimestamp returns the offset and timestamp of the first remote
// record whose timestamp is >= ts (ts >= 0), as Kafka's
// RemoteLogManager.findOffsetByTimestamp: the first finished segment whose
// largest timestamp reaches ts is searched from the position of its time
// index's last entry below ts. ok is false when no remote record has such
// a timestamp.
func (m *Manager) OffsetForTimestamp(t *replica.Topic, p *replica.Partition, ts int64) (offset, timestamp int64, ok bool, err error) {
	if !m.TopicTiering(t).Enable {
		return 0, 0, false, nil
	}
	start, _, err := m.LogStart(t, p)
	if err != nil {
		return 0, 0, false, err
	}
	rs, err := m.remote(m.partitionOf(t, p.Index()))
	if err != nil {
		return 0, 0, false, err
	}
	for _, md := range rs.segs {
		if md.MaxTimestamp < ts || md.EndOffset < start {
			continue // older, or wholly below the log start
		}
		if off, tts, ok, err := m.reader.searchTimestamp(md, ts, start); err != nil || ok {
			return off, tts, ok, err
		}
	}
	return 0, 0, false, nil
}

// searchTimestamp finds in md the first record at or above offset floor
// (the log start) whose timestamp is >= ts.
func (r *reader) searchTimestamp(md SegmentMetadata, ts, floor int64) (int64, int64, bool, error) {
	from := md.StartOffset
	if rc, err := r.m.rsm.FetchIndex(md, IndexTimestamp); err == nil {
		tix, rerr := io.ReadAll(io.LimitReader(rc, 64<<20))
		rc.Close()
		if rerr != nil {
			return 0, 0, false, fmt.Errorf("%w: read time index: %v", ErrRemoteStorage, rerr)
		}
		// Entries (timestamp int64, offset - base int32), ascending.
		for i := 0; i+12 <= len(tix); i += 12 {
			if int64(binary.BigEndian.Uint64(tix[i:])) >= ts {
				break
			}
			from = md.StartOffset + int64(int32(binary.BigEndian.Uint32(tix[i+8:])))
		}
	} else if !errors.Is(err, ErrRemoteNotFound) {
		return 0, 0, false, err
	}
	from = max(from, floor)
	idx, err := r.offsetIndex(md)
	if err != nil {
		return 0, 0, false, err
	}
	pos := lookup(idx, md.StartOffset, from)
	rc, err := r.m.rsm.FetchLogSegment(md, pos)
	if err != nil {
		return 0, 0, false, err
	}
	defer rc.Close()
	var it record.Iter
	var buf []byte
	for left := md.SizeInBytes - pos; left >= record.HeaderSize; {
		if cap(buf) < record.HeaderSize {
			buf = make([]byte, record.HeaderSize)
		}
		buf = buf[:record.HeaderSize]
		if _, err := io.ReadFull(rc, buf); err != nil {
			return 0, 0, false, fmt.Errorf("%w: segment %s: %v", ErrRemoteStorage, md.SegmentID, err)
		}
		size := int64(record.Batch(buf).Size())
		if size < record.HeaderSize || size > left {
			return 0, 0, false, fmt.Errorf("%w: segment %s: batch of %d bytes with %d left", ErrRemoteStorage, md.SegmentID, size, left)
		}
		left -= size
		b := append(buf, make([]byte, size-record.HeaderSize)...)
		if _, err := io.ReadFull(rc, b[record.HeaderSize:]); err != nil {
			return 0, 0, false, fmt.Errorf("%w: segment %s: %v", ErrRemoteStorage, md.SegmentID, err)
		}
		buf = b
		if record.Batch(b).MaxTimestamp() < ts || record.Batch(b).LastOffset() < floor {
			continue
		}
		it.Reset(record.Batch(b))
		for it.Next() {
			if it.Timestamp() >= ts && it.Offset() >= floor {
				return it.Offset(), it.Timestamp(), true, nil
			}
		}
		if err := it.Err(); err != nil {
			return 0, 0, false, fmt.Errorf("%w: segment %s: %v", ErrRemoteStorage, md.SegmentID, err)
		}
	}
	return 0, 0, false, nil
}
