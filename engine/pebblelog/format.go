package pebblelog

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

// Key layout. Every partition of the store lives in one Pebble DB; a
// partition is named in keys by a numeric id assigned at CreateLog, so the
// keys that repeat per batch are 17 bytes. All integers are big-endian, so
// byte order is numeric order. Part of the on-disk format: do not change
// without bumping formatVersion.
//
//	version   +------+
//	          | 0x00 |                                  -> u32 formatVersion
//	          +------+
//	catalog   +------+-----------+-------+-----------+
//	          | 0x01 | topicLen  | topic | partition |  -> u64 id
//	          |      | u16       | bytes | i32       |
//	          +------+-----------+-------+-----------+
//	next id   +------+
//	          | 0x02 |                                  -> u64 next unused id
//	          +------+
//	log meta  +------+--------+-------+
//	          | 0x03 | id u64 | field |                 -> see metaStart, metaEpochs
//	          +------+--------+-------+
//	segment   +------+--------+-----------------+
//	          | 0x04 | id u64 | baseOffset u64  |       -> segment summary (40 bytes)
//	          +------+--------+-----------------+
//	batch idx +------+--------+-----------------+
//	          | 0x05 | id u64 | baseOffset u64  |       -> batch summary (16 bytes)
//	          +------+--------+-----------------+
//	batch     +------+--------+-----------------+
//	          | 0x06 | id u64 | baseOffset u64  |       -> batch pointer (16 bytes), or
//	          +------+--------+-----------------+          RecordBatch v2 bytes (inline)
//	high      +------+
//	watermarks| 0x07 |                                  -> high watermarks, see below
//	          +------+
//	aborted   +------+--------+-----------------+
//	txn       | 0x08 | id u64 | lastOffset u64  |       -> aborted transaction (34 bytes)
//	          +------+--------+-----------------+
//	snapshot  +------+--------+-----------------+
//	          | 0x09 | id u64 | offset u64      |       -> snapshot bytes, as given
//	          +------+--------+-----------------+
//	clean     +------+
//	          | 0x0a |                                  -> empty: the last Close was clean
//	          +------+
//
// Values:
//
//	metaStart   i64 log start offset
//	metaEpochs  n x (i32 epoch, i64 startOffset), ascending (engine.EpochCache)
//	metaCleaner i64 cleaner checkpoint (engine.Compactable); missing: 0
//	metaPos     u64 append position of the log's data file; missing: 0
//	metaFlushed u64 data file bytes made durable (fdatasync) before a sync
//	            of the DB; missing: 0
//	metaPunch   n x (lo u64, hi u64): data file ranges no longer indexed
//	            but not yet punched when the store last closed (the delete
//	            delay, datafile.go); the log's next load queues them again.
//	            Older builds never read it. missing: none
//	segment     +----------+-----------+--------+-------------+-----------+
//	summary     | next i64 | bytes i64 | maxTs  | createdMs   | writeMs   |
//	            |          |           | i64    | i64         | i64       |
//	            +----------+-----------+--------+-------------+-----------+
//	batch       +--------------------+----------+-----------+
//	summary     | lastOffsetDelta u32| size u32 | maxTs i64 |
//	            +--------------------+----------+-----------+
//	batch       +--------+----------+--------------------+
//	pointer     | pos u64| size u32 | lastOffsetDelta u32|
//	            +--------+----------+--------------------+
//
//	high        +-----------+  then count entries, ascending by (topic, partition):
//	watermarks  | count u32 |  +----------+-------+-----------+-----------+
//	            +-----------+  | topicLen | topic | partition | offset    |
//	                           | u16      | bytes | i32 (>= 0)| i64 (>= 0)|
//	                           +----------+-------+-----------+-----------+
//
//	aborted     +-------------+---------------+----------------+---------------+---------------------+
//	txn         | version i16 | producerId i64| firstOffset i64| lastOffset i64| lastStableOffset i64|
//	            +-------------+---------------+----------------+---------------+---------------------+
//	            (version 0: a .txnindex entry of the segment backend, Kafka's AbortedTxn)
//
// The aborted transactions (engine.TxnIndex) are keyed by their marker's
// offset, so they go with the segment holding the marker: Truncate and
// retention range-delete them with the batches, cleaning keeps them.
// Builds before transactions never read tag 0x08, so adding it did not
// change formatVersion.
//
// The snapshots (engine.SnapshotStore) are opaque bytes keyed by their
// offset; only TruncateFullyAndStartAt and DeleteLog remove them with the
// log, the caller removes the others. Builds before them never read tag
// 0x09, so adding it did not change formatVersion.
//
// The high watermarks key (engine.HighWatermarkStore, Kafka's
// replication-offset-checkpoint) is one value for the whole store, replaced
// whole at each save; older builds never read tag 0x07, so adding it did not
// change formatVersion.
//
// A segment is the emulation of a segment file: a run of consecutive batches
// of at most segment.bytes (or segment.ms old), so that retention deletes
// whole segments as the segment backend does. It covers the offsets
// [base, next): segments follow each other without holes (a segment's next
// is the next one's base), but its batches need not fill that range, since
// a follower copies a compacted leader's gaps and the log cleaner removes
// batches (ReplaceSegments). A segment may hold no batch at all (a cleaned
// group left empty, or a Truncate into a gap). bytes is the sum of its
// batch sizes; maxTs the largest batch maxTimestamp (-1: none); createdMs
// and writeMs the wall clock of its first and latest append. The batch
// summaries are a time and size index, one per batch, with increasing
// offsets: OffsetForTimestamp scans them instead of the batches.
//
// Every Append writes its batches, their summaries and the updated segment
// summary in one Pebble batch, so after any crash they agree; the log end
// offset is the last segment's next (or the start offset when there is no
// segment). A cleaning commit likewise replaces the batches, summaries and
// segment summaries of [from, to) in one Pebble batch.
//
// Logs written before cleaning existed have dense offsets, which this
// layout still describes; builds that required dense offsets refuse a
// store with gaps as corrupt at OpenLog rather than misread it.
//
// Data files (format version 2). The bytes of a batch appended by version
// 2 live in the log's data file, <Dir>/records/<id>.data (id in decimal),
// and its 0x06 value is a pointer to them: size bytes at file position pos.
// A data file is append-only: the append position only grows and is
// stored under metaPos with every append, so a position is never reused for
// other bytes while an index entry may name it, and bytes no longer indexed
// (truncated, retained away, cleaned) are punched out of the file. Version
// 1 stores held every batch inline in its 0x06 value; version 2 reads them
// as they are (a RecordBatch is at least 61 bytes, a pointer 16), so a
// store opened by version 2 mixes both, and version 2 rewrites the version
// key at open so that a version 1 build refuses the store instead of
// misreading pointers as batches. Appends commit without a sync (the
// record bytes are in the page cache once pwrite returns); recovery.go
// describes how an unclean shutdown is repaired from the data files.
const (
	formatVersion = 2
	// oldFormatVersion is the version before data files, still read.
	oldFormatVersion = 1

	tagVersion  = 0x00
	tagCatalog  = 0x01
	tagNextID   = 0x02
	tagMeta     = 0x03
	tagSegment  = 0x04
	tagBatchIdx = 0x05
	tagBatch    = 0x06
	tagHighWM   = 0x07
	tagAborted  = 0x08
	tagSnapshot = 0x09
	tagClean    = 0x0a

	metaStart   = 0x01
	metaEpochs  = 0x02
	metaCleaner = 0x03
	metaPos     = 0x04
	metaFlushed = 0x05
	metaPunch   = 0x06

	logKeyLen       = 1 + 8 + 8 // tag, id, offset
	segSummaryLen   = 40
	abortedTxnLen   = 34
	batchSummaryLen = 16
	pointerLen      = 16
)

// encodePointer encodes a batch pointer into dst (len >= pointerLen).
func encodePointer(dst []byte, pos int64, size int, lastOffsetDelta int32) []byte {
	dst = dst[:pointerLen]
	binary.BigEndian.PutUint64(dst[0:], uint64(pos))
	binary.BigEndian.PutUint32(dst[8:], uint32(size))
	binary.BigEndian.PutUint32(dst[12:], uint32(lastOffsetDelta))
	return dst
}

// maxFilePos bounds a pointer's position, so that pos+size never overflows.
const maxFilePos = 1 << 62

// batchPointer is a decoded 0x06 value of pointerLen bytes.
type batchPointer struct {
	pos             int64
	size            int
	lastOffsetDelta int32
}

// decodePointer decodes v if it is a pointer (pointerLen bytes); an inline
// batch is longer. A pointer with a negative position or a size below a
// batch header or above the largest batch (record.MaxBatchSize) is corrupt
// and reported as not ok with bad set. Users still check the size against
// the file before they read (or allocate) it.
func decodePointer(v []byte) (p batchPointer, ok, bad bool) {
	if len(v) != pointerLen {
		return batchPointer{}, false, false
	}
	p = batchPointer{
		pos:             int64(binary.BigEndian.Uint64(v[0:])),
		size:            int(binary.BigEndian.Uint32(v[8:])),
		lastOffsetDelta: int32(binary.BigEndian.Uint32(v[12:])),
	}
	if p.pos < 0 || p.pos > maxFilePos || p.size < record.HeaderSize || p.size > record.LogOverhead+record.MaxBatchSize || p.lastOffsetDelta < 0 {
		return batchPointer{}, false, true
	}
	return p, true, false
}

// catalogKey returns the catalog key of a partition.
func catalogKey(id engine.PartitionID) []byte {
	k := make([]byte, 0, 1+2+len(id.Topic)+4)
	k = append(k, tagCatalog)
	k = binary.BigEndian.AppendUint16(k, uint16(len(id.Topic)))
	k = append(k, id.Topic...)
	return binary.BigEndian.AppendUint32(k, uint32(id.Partition))
}

// parseCatalogKey is the inverse of catalogKey.
func parseCatalogKey(k []byte) (engine.PartitionID, error) {
	if len(k) < 3 || k[0] != tagCatalog {
		return engine.PartitionID{}, fmt.Errorf("%w: catalog key %x", engine.ErrCorruptStore, k)
	}
	n := int(binary.BigEndian.Uint16(k[1:]))
	if len(k) != 3+n+4 {
		return engine.PartitionID{}, fmt.Errorf("%w: catalog key %x: length", engine.ErrCorruptStore, k)
	}
	return engine.PartitionID{Topic: string(k[3 : 3+n]), Partition: int32(binary.BigEndian.Uint32(k[3+n:]))}, nil
}

// metaKey returns the key of one metadata field of log id.
// setFlushed sets log n's flushed position (metaFlushed) to p in b.
func setFlushed(b *pebble.Batch, n uint64, p int64) {
	_ = b.Set(metaKey(n, metaFlushed), appendU64(nil, uint64(p)), nil)
}

func metaKey(id uint64, field byte) []byte {
	k := make([]byte, 0, 10)
	k = append(k, tagMeta)
	k = binary.BigEndian.AppendUint64(k, id)
	return append(k, field)
}

// logKey writes the key tag|id|offset into dst (len logKeyLen) and returns it.
func logKey(dst []byte, tag byte, id uint64, offset int64) []byte {
	dst = dst[:logKeyLen]
	dst[0] = tag
	binary.BigEndian.PutUint64(dst[1:], id)
	binary.BigEndian.PutUint64(dst[9:], uint64(offset))
	return dst
}

// newLogKey is logKey into a fresh slice.
func newLogKey(tag byte, id uint64, offset int64) []byte {
	return logKey(make([]byte, logKeyLen), tag, id, offset)
}

// logKeyEnd returns the first key past every key tag|id|..., an exclusive
// upper bound for range deletes and iterators.
func logKeyEnd(tag byte, id uint64) []byte {
	k := make([]byte, 9)
	k[0] = tag
	binary.BigEndian.PutUint64(k[1:], id+1)
	return k
}

// keyOffset returns the offset of a log key (tag|id|offset).
func keyOffset(k []byte) (int64, bool) {
	if len(k) != logKeyLen {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(k[9:])), true
}

// segment is the in-memory copy of a segment summary.
type segment struct {
	base, next int64
	bytes      int64
	maxTs      int64
	createdMs  int64
	writeMs    int64
	// gen names this version of the segment in memory (not stored):
	// every change to an inactive segment gives it a new gen, so a
	// cleaning commit can tell that the segments it read are still there.
	gen uint64
}

// retentionTime is the time (ms) retention.ms measures a segment by: its
// largest timestamp, or its last write when no batch carried one, as Kafka.
func (s *segment) retentionTime() int64 {
	if s.maxTs >= 0 {
		return s.maxTs
	}
	return s.writeMs
}

func (s *segment) encode(dst []byte) []byte {
	dst = dst[:segSummaryLen]
	be := binary.BigEndian
	be.PutUint64(dst[0:], uint64(s.next))
	be.PutUint64(dst[8:], uint64(s.bytes))
	be.PutUint64(dst[16:], uint64(s.maxTs))
	be.PutUint64(dst[24:], uint64(s.createdMs))
	be.PutUint64(dst[32:], uint64(s.writeMs))
	return dst
}

func decodeSegment(base int64, v []byte) (segment, error) {
	if len(v) != segSummaryLen {
		return segment{}, fmt.Errorf("%w: segment %d summary is %d bytes, want %d", engine.ErrCorruptStore, base, len(v), segSummaryLen)
	}
	be := binary.BigEndian
	s := segment{
		base:      base,
		next:      int64(be.Uint64(v[0:])),
		bytes:     int64(be.Uint64(v[8:])),
		maxTs:     int64(be.Uint64(v[16:])),
		createdMs: int64(be.Uint64(v[24:])),
		writeMs:   int64(be.Uint64(v[32:])),
	}
	if s.next <= s.base || s.bytes < 0 {
		return segment{}, fmt.Errorf("%w: segment %d summary: next %d, bytes %d", engine.ErrCorruptStore, base, s.next, s.bytes)
	}
	return s, nil
}

// batchSummary is the decoded value of a batch index key.
type batchSummary struct {
	base, last int64
	size       int
	maxTs      int64
}

func encodeBatchSummary(dst []byte, lastOffsetDelta int32, size int, maxTs int64) []byte {
	dst = dst[:batchSummaryLen]
	binary.BigEndian.PutUint32(dst[0:], uint32(lastOffsetDelta))
	binary.BigEndian.PutUint32(dst[4:], uint32(size))
	binary.BigEndian.PutUint64(dst[8:], uint64(maxTs))
	return dst
}

func decodeBatchSummary(k, v []byte) (batchSummary, error) {
	base, ok := keyOffset(k)
	if !ok || len(v) != batchSummaryLen {
		return batchSummary{}, fmt.Errorf("%w: batch index key %x value %d bytes", engine.ErrCorruptStore, k, len(v))
	}
	return batchSummary{
		base:  base,
		last:  base + int64(binary.BigEndian.Uint32(v[0:])),
		size:  int(binary.BigEndian.Uint32(v[4:])),
		maxTs: int64(binary.BigEndian.Uint64(v[8:])),
	}, nil
}

func encodeEpochs(entries []engine.EpochEntry) []byte {
	v := make([]byte, 0, 12*len(entries))
	for _, e := range entries {
		v = binary.BigEndian.AppendUint32(v, uint32(e.Epoch))
		v = binary.BigEndian.AppendUint64(v, uint64(e.StartOffset))
	}
	return v
}

func decodeEpochs(v []byte) ([]engine.EpochEntry, error) {
	if len(v)%12 != 0 {
		return nil, fmt.Errorf("%w: epoch history is %d bytes, not a multiple of 12", engine.ErrCorruptStore, len(v))
	}
	out := make([]engine.EpochEntry, 0, len(v)/12)
	for ; len(v) > 0; v = v[12:] {
		out = append(out, engine.EpochEntry{
			Epoch:       int32(binary.BigEndian.Uint32(v)),
			StartOffset: int64(binary.BigEndian.Uint64(v[4:])),
		})
	}
	return out, nil
}

// encodeHighWatermarks encodes hw sorted by (topic, partition), so a set
// has one encoding.
func encodeHighWatermarks(hw map[engine.PartitionID]int64) []byte {
	ids := make([]engine.PartitionID, 0, len(hw))
	n := 4
	for id := range hw {
		ids = append(ids, id)
		n += 2 + len(id.Topic) + 4 + 8
	}
	slices.SortFunc(ids, comparePartitions)
	v := make([]byte, 0, n)
	v = binary.BigEndian.AppendUint32(v, uint32(len(ids)))
	for _, id := range ids {
		v = binary.BigEndian.AppendUint16(v, uint16(len(id.Topic)))
		v = append(v, id.Topic...)
		v = binary.BigEndian.AppendUint32(v, uint32(id.Partition))
		v = binary.BigEndian.AppendUint64(v, uint64(hw[id]))
	}
	return v
}

// decodeHighWatermarks is the inverse of encodeHighWatermarks; anything it
// would not have written is an error wrapping engine.ErrCorruptStore.
func decodeHighWatermarks(v []byte) (map[engine.PartitionID]int64, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: high watermarks key %#x: %s", engine.ErrCorruptStore, tagHighWM, fmt.Sprintf(format, args...))
	}
	if len(v) < 4 {
		return nil, bad("%d bytes, need a count", len(v))
	}
	count := binary.BigEndian.Uint32(v)
	v = v[4:]
	if uint64(count) > uint64(len(v))/14 { // 14: an entry with an empty topic
		return nil, bad("count %d does not fit %d bytes", count, len(v))
	}
	hw := make(map[engine.PartitionID]int64, count)
	var prev engine.PartitionID
	for i := uint32(0); i < count; i++ {
		if len(v) < 2 {
			return nil, bad("entry %d: truncated", i)
		}
		n := int(binary.BigEndian.Uint16(v))
		if len(v) < 2+n+12 {
			return nil, bad("entry %d: truncated", i)
		}
		id := engine.PartitionID{Topic: string(v[2 : 2+n]), Partition: int32(binary.BigEndian.Uint32(v[2+n:]))}
		off := int64(binary.BigEndian.Uint64(v[6+n:]))
		v = v[2+n+12:]
		if id.Partition < 0 || off < 0 {
			return nil, bad("entry %d: %q/%d offset %d", i, id.Topic, id.Partition, off)
		}
		if i > 0 && comparePartitions(prev, id) >= 0 {
			return nil, bad("entry %d: %q/%d out of order", i, id.Topic, id.Partition)
		}
		hw[id], prev = off, id
	}
	if len(v) != 0 {
		return nil, bad("%d bytes after the last entry", len(v))
	}
	return hw, nil
}

// comparePartitions orders partitions by topic, then partition.
func comparePartitions(a, b engine.PartitionID) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}
