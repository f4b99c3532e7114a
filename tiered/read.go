package tiered

import (
	"container/list"
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

// ErrRemoteFetchBusy: every remote reader stayed busy for
// remote.fetch.max.wait.ms; the fetch answers no records for the
// partition and the client fetches again.
var ErrRemoteFetchBusy = errors.New("tiered: remote readers busy")

// reader serves fetches from the remote tier: at most
// remote.log.reader.threads reads at once (each holding at most the
// fetch's partition bytes, so memory stays bounded), the offset indexes
// of recently read segments cached up to
// remote.log.index.file.cache.total.size.bytes, reads paced to
// remote.log.manager.fetch.max.bytes.per.second.
type reader struct {
	m       *Manager
	slots   chan struct{}
	maxWait time.Duration
	rate    *rate

	mu       sync.Mutex
	cacheMax int64
	cached   int64
	lru      *list.List // of *indexEntry, most recent first
	byID     map[UUID]*list.Element
}

type indexEntry struct {
	id  UUID
	idx []byte // the .index object: 8-byte entries (relative offset, position)
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
	r.cacheMax = c.RemoteLogIndexCacheBytes
	r.lru = list.New()
	r.byID = map[UUID]*list.Element{}
}

// forget drops a deleted segment's cached index.
func (r *reader) forget(id UUID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.byID[id]; e != nil {
		r.cached -= int64(len(e.Value.(*indexEntry).idx))
		r.lru.Remove(e)
		delete(r.byID, id)
	}
}

func (r *reader) offsetIndex(md SegmentMetadata) ([]byte, error) {
	r.mu.Lock()
	if e := r.byID[md.SegmentID]; e != nil {
		r.lru.MoveToFront(e)
		idx := e.Value.(*indexEntry).idx
		r.mu.Unlock()
		return idx, nil
	}
	r.mu.Unlock()
	rc, err := r.m.rsm.FetchIndex(md, IndexOffset)
	if err != nil {
		return nil, err
	}
	idx, err := io.ReadAll(io.LimitReader(rc, 64<<20))
	rc.Close()
	if err != nil {
		return nil, fmt.Errorf("%w: read offset index: %v", ErrRemoteStorage, err)
	}
	idx = idx[:len(idx)/8*8]
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID[md.SegmentID] == nil && int64(len(idx)) <= r.cacheMax {
		r.byID[md.SegmentID] = r.lru.PushFront(&indexEntry{id: md.SegmentID, idx: idx})
		r.cached += int64(len(idx))
		for r.cached > r.cacheMax {
			last := r.lru.Back()
			e := last.Value.(*indexEntry)
			r.cached -= int64(len(e.idx))
			r.lru.Remove(last)
			delete(r.byID, e.id)
		}
	}
	return idx, nil
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
// tier (Kafka's logStartOffset: the first remote offset when there is
// one), and its local log start.
func (m *Manager) LogStart(t *replica.Topic, p *replica.Partition) (start, local int64, err error) {
	local = p.LogStartOffset()
	if !m.TopicTiering(t).Enable {
		return local, local, nil
	}
	rs, err := m.remote(m.partitionOf(t, p.Index()))
	if err != nil {
		return local, local, err
	}
	if rs.start >= 0 && rs.start < local {
		return rs.start, local, nil
	}
	return local, local, nil
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
	r := &m.reader
	timer := time.NewTimer(r.maxWait)
	defer timer.Stop()
	select {
	case r.slots <- struct{}{}:
	case <-timer.C:
		return zerocopy.Slice{}, nil, ErrRemoteFetchBusy
	case <-ctx.Done():
		return zerocopy.Slice{}, nil, ctx.Err()
	}
	defer func() { <-r.slots }()
	b, err := r.readBatches(md, offset, maxBytes, upTo)
	if err != nil || len(b) == 0 {
		return zerocopy.Slice{}, nil, err
	}
	r.rate.wait(int64(len(b)))
	var aborted []engine.AbortedTxn
	if !md.TxnIndexEmpty {
		last := record.Batch(lastBatch(b)).LastOffset()
		if aborted, err = r.abortedTxns(md, offset, last+1); err != nil {
			return zerocopy.Slice{}, nil, err
		}
	}
	return zerocopy.BytesSlice(b), aborted, nil
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
	rc, err := r.m.rsm.FetchIndex(md, IndexTransaction)
	if errors.Is(err, ErrRemoteNotFound) {
		// Optional: none for a segment without aborted transactions
		// (Kafka's RemoteIndexCache makes an empty one).
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(rc, 64<<20))
	rc.Close()
	if err != nil {
		return nil, fmt.Errorf("%w: read txn index: %v", ErrRemoteStorage, err)
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
	rs, err := m.remote(m.partitionOf(t, p.Index()))
	if err != nil {
		return 0, 0, false, err
	}
	for _, md := range rs.segs {
		if md.MaxTimestamp < ts {
			continue
		}
		return m.reader.searchTimestamp(md, ts)
	}
	return 0, 0, false, nil
}

func (r *reader) searchTimestamp(md SegmentMetadata, ts int64) (int64, int64, bool, error) {
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
		if record.Batch(b).MaxTimestamp() < ts {
			continue
		}
		it.Reset(record.Batch(b))
		for it.Next() {
			if it.Timestamp() >= ts {
				return it.Offset(), it.Timestamp(), true, nil
			}
		}
		if err := it.Err(); err != nil {
			return 0, 0, false, fmt.Errorf("%w: segment %s: %v", ErrRemoteStorage, md.SegmentID, err)
		}
	}
	return 0, 0, false, nil
}
