package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/sluice/sluice/engine"
)

// The aborted-transaction index (.txnindex, Kafka's TransactionIndex): one
// fixed-size entry per transaction aborted by a marker in the segment, in
// marker order, appended when the partition writes (or replicates) the
// marker. The file exists only once the segment has an entry. Part of the
// on-disk format: Kafka's, do not change.
//
//	+---------------+----------------+------------------+-----------------+-----------------------+
//	| version int16 | producerId i64 | firstOffset i64  | lastOffset i64  | lastStableOffset i64  |
//	+---------------+----------------+------------------+-----------------+-----------------------+
//	  0               2                10                 18                26                      34
//
// Big-endian; version 0. lastOffset is the ABORT marker's offset.
const (
	txnIndexSuffix    = ".txnindex"
	txnEntrySize      = 34
	txnEntryVersion   = 0
	txnOffProducerID  = 2
	txnOffFirstOffset = 10
	txnOffLastOffset  = 18
	txnOffLSO         = 26
)

// txnIndex is one segment's .txnindex, its entries cached in memory (an
// index holds one entry per aborted transaction: small). Safe for
// concurrent use: mu guards everything.
//
// Invariant: the file holds exactly len(entries)*txnEntrySize bytes, the
// entries encoded in order (after open, which cuts a torn tail).
type txnIndex struct {
	path    string
	mu      sync.Mutex
	f       *os.File // nil until the first append of this process
	entries []engine.AbortedTxn
	// unsynced is set when this process wrote the file since its last
	// fsync: sync must fsync it even if the open-segment cache closed f
	// since (opencache.go), or a flush would move the recovery point past
	// entries still only in the page cache.
	unsynced bool
	// cut is how many bytes of a torn tail open removed (for the log).
	cut int
}

// encodeTxnEntry writes t into b[:txnEntrySize].
func encodeTxnEntry(b []byte, t engine.AbortedTxn) {
	be := binary.BigEndian
	be.PutUint16(b, txnEntryVersion)
	be.PutUint64(b[txnOffProducerID:], uint64(t.ProducerID))
	be.PutUint64(b[txnOffFirstOffset:], uint64(t.FirstOffset))
	be.PutUint64(b[txnOffLastOffset:], uint64(t.LastOffset))
	be.PutUint64(b[txnOffLSO:], uint64(t.LastStableOffset))
}

// DecodeTxnIndex parses the entries of a .txnindex file's bytes. It stops
// at a torn tail (fewer than 34 bytes) or an entry of another version,
// returning the entries before it and how many bytes they take (valid <
// len(b) then).
func DecodeTxnIndex(b []byte) (entries []engine.AbortedTxn, valid int) {
	be := binary.BigEndian
	for valid+txnEntrySize <= len(b) {
		e := b[valid : valid+txnEntrySize]
		if be.Uint16(e) != txnEntryVersion {
			break
		}
		entries = append(entries, engine.AbortedTxn{
			ProducerID:       int64(be.Uint64(e[txnOffProducerID:])),
			FirstOffset:      int64(be.Uint64(e[txnOffFirstOffset:])),
			LastOffset:       int64(be.Uint64(e[txnOffLastOffset:])),
			LastStableOffset: int64(be.Uint64(e[txnOffLSO:])),
		})
		valid += txnEntrySize
	}
	return entries, valid
}

// openTxnIndex loads the index at path (none: empty). A torn or unreadable
// tail is cut from the file (cut reports how many bytes), as Kafka drops a
// partial entry; entries whose marker lies outside the segment are the
// caller's to cut (txnIndex.truncateTo).
func openTxnIndex(path string) (ix *txnIndex, cut int, err error) {
	ix = &txnIndex{path: path}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return ix, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%w: read %s: %v", engine.ErrCorruptStore, path, err)
	}
	var valid int
	ix.entries, valid = DecodeTxnIndex(b)
	if valid < len(b) {
		if err := os.Truncate(path, int64(valid)); err != nil {
			return nil, 0, fmt.Errorf("segment: cut %s to %d: %w", path, valid, err)
		}
	}
	ix.cut = len(b) - valid
	return ix, ix.cut, nil
}

// openFileLocked opens the file for writing. REQUIRES: ix.mu held.
func (ix *txnIndex) openFileLocked() error {
	if ix.f != nil {
		return nil
	}
	f, err := os.OpenFile(ix.path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("segment: open %s: %w", ix.path, err)
	}
	ix.f = f
	return nil
}

// append adds entries at the end of the index.
func (ix *txnIndex) append(ts ...engine.AbortedTxn) error {
	if len(ts) == 0 {
		return nil
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := ix.openFileLocked(); err != nil {
		return err
	}
	buf := make([]byte, len(ts)*txnEntrySize)
	for i, t := range ts {
		encodeTxnEntry(buf[i*txnEntrySize:], t)
	}
	ix.unsynced = true
	if _, err := ix.f.WriteAt(buf, int64(len(ix.entries))*txnEntrySize); err != nil {
		return fmt.Errorf("segment: write %s: %w", ix.path, err)
	}
	ix.entries = append(ix.entries, ts...)
	return nil
}

// truncateTo drops the entries whose marker is at or after next.
func (ix *txnIndex) truncateTo(next int64) error {
	_, err := ix.keepRange(-1, next)
	return err
}

// check is the sanity check of a segment's index on load (Kafka's
// TransactionIndex.sanityCheck): every marker offset in [base, next) and
// every entry's first offset at or below its marker.
func (ix *txnIndex) check(base, next int64) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for i, t := range ix.entries {
		if t.LastOffset < base || t.LastOffset >= next || t.FirstOffset > t.LastOffset {
			return fmt.Errorf("%s: entry %d (producer %d, offsets [%d, %d]) lies outside [%d, %d)", ix.path, i, t.ProducerID, t.FirstOffset, t.LastOffset, base, next)
		}
	}
	return nil
}

// keepRange drops the entries whose marker lies outside [base, next) or
// whose first offset is past the marker, and returns how many it dropped.
func (ix *txnIndex) keepRange(base, next int64) (int, error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	keep := 0
	for _, t := range ix.entries {
		if t.LastOffset >= base && t.LastOffset < next && t.FirstOffset <= t.LastOffset {
			ix.entries[keep] = t
			keep++
		}
	}
	dropped := len(ix.entries) - keep
	if dropped == 0 {
		return 0, nil
	}
	ix.entries = ix.entries[:keep]
	// Rewrite the kept entries in place, then cut the file after them.
	if err := ix.openFileLocked(); err != nil {
		return dropped, err
	}
	buf := make([]byte, keep*txnEntrySize)
	for i, t := range ix.entries {
		encodeTxnEntry(buf[i*txnEntrySize:], t)
	}
	ix.unsynced = true
	if _, err := ix.f.WriteAt(buf, 0); err != nil {
		return dropped, fmt.Errorf("segment: write %s: %w", ix.path, err)
	}
	if err := ix.f.Truncate(int64(keep) * txnEntrySize); err != nil {
		return dropped, fmt.Errorf("segment: truncate %s: %w", ix.path, err)
	}
	return dropped, nil
}

// collect appends the entries overlapping [from, upTo) to dst; done
// reports that the search is complete (see engine.OverlapsAbortedTxn).
func (ix *txnIndex) collect(dst []engine.AbortedTxn, from, upTo int64) ([]engine.AbortedTxn, bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, t := range ix.entries {
		overlaps, done := engine.OverlapsAbortedTxn(t, from, upTo)
		if overlaps {
			dst = append(dst, t)
		}
		if done {
			return dst, true
		}
	}
	return dst, false
}

// all returns a copy of the entries.
func (ix *txnIndex) all() []engine.AbortedTxn {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return append([]engine.AbortedTxn(nil), ix.entries...)
}

// sync fsyncs the file if this process wrote it since the last sync,
// reopening it when it was closed since (an fsync through any descriptor
// writes the file's dirty pages and reports a writeback error nobody saw).
func (ix *txnIndex) sync() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if !ix.unsynced || fsyncOff.Load() {
		return nil
	}
	f := ix.f
	if f == nil {
		var err error
		if f, err = os.OpenFile(ix.path, os.O_WRONLY, 0); err != nil {
			return fmt.Errorf("segment: fsync %s: %w", ix.path, err)
		}
		defer f.Close()
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("segment: fsync %s: %w", ix.path, err)
	}
	ix.unsynced = false
	return nil
}

// close closes the file; the index stays readable from memory.
func (ix *txnIndex) close() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.f == nil {
		return nil
	}
	err := ix.f.Close()
	ix.f = nil
	if err != nil {
		return fmt.Errorf("segment: close %s: %w", ix.path, err)
	}
	return nil
}

// remove closes and deletes the file.
func (ix *txnIndex) remove() error {
	if err := ix.close(); err != nil {
		return err
	}
	if err := os.Remove(ix.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("segment: remove %s: %w", ix.path, err)
	}
	ix.mu.Lock()
	ix.unsynced = false // nothing left to sync
	ix.mu.Unlock()
	return nil
}

// AppendAbortedTxn implements engine.TxnIndex: the entry goes to the
// .txnindex of the segment holding the marker.
func (l *Log) AppendAbortedTxn(t engine.AbortedTxn) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed.Load() {
		return errClosedLog
	}
	if err := l.failure(); err != nil {
		return err
	}
	if t.LastOffset < l.start.Load() || t.LastOffset >= l.end.Load() {
		return fmt.Errorf("%w: aborted transaction marker at %d, log holds [%d, %d)", engine.ErrOffsetOutOfRange, t.LastOffset, l.start.Load(), l.end.Load())
	}
	l.mu.RLock()
	s := l.segs[l.segmentFor(t.LastOffset)]
	l.mu.RUnlock()
	// Segments are replaced or removed only with appendMu held: s stays.
	if err := s.txn.append(t); err != nil {
		return l.fail(err)
	}
	return nil
}

// AbortedTxns implements engine.TxnIndex, searching the segments from the
// one holding from (Kafka's UnifiedLog.collectAbortedTransactions).
func (l *Log) AbortedTxns(from, upTo int64) ([]engine.AbortedTxn, error) {
	if l.closed.Load() {
		return nil, errClosedLog
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []engine.AbortedTxn
	for _, s := range l.segs[l.segmentFor(from):] {
		// A later segment may hold the marker of a transaction that
		// began before upTo: go on until an entry says the search is
		// complete, as Kafka does.
		var done bool
		if out, done = s.txn.collect(out, from, upTo); done {
			break
		}
	}
	return out, nil
}

// SegmentAbortedTxns returns the aborted-transaction entries of the
// segment at base, in file order (for dump-log and tests).
func (l *Log) SegmentAbortedTxns(base int64) []engine.AbortedTxn {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, s := range l.segs {
		if s.base == base {
			return s.txn.all()
		}
	}
	return nil
}

var _ engine.TxnIndex = (*Log)(nil)
