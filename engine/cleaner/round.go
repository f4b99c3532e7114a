// Package cleaner runs log compaction (cleanup.policy=compact) on every
// backend: it picks the dirtiest compacted log, reads it through
// engine.Log.Read, cleans it with the pure core in engine/compact and
// writes the result through the engine.Compactable capability, one group
// of segments at a time. Kafka's LogCleaner, LogCleanerManager and Cleaner
// are the model: the active segment is never cleaned; a round builds the
// offset map over the dirty part (what was written since the last round,
// up to the first uncleanable offset) and then rewrites every segment from
// the log start up to where the map ends; the cleaner offset checkpoint
// records where the next round starts.
package cleaner

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/engine/compact"
	"github.com/sluice/sluice/record"
)

// Target is one log the cleaner may clean, with what it needs to know about
// it from the layers above the engine.
type Target struct {
	ID     engine.PartitionID
	Log    engine.Log // must implement engine.Compactable to be cleaned
	Config engine.LogConfig
	// Bound: no offset at or past it is cleaned (the last stable offset:
	// Kafka never cleans past it, so a replica never cleans what its
	// leader may still truncate, nor a transaction not yet decided).
	// < 0: no bound.
	Bound int64
	// ProducerLast is compact.Rules.ProducerLast: the last data offset
	// of each active idempotent producer, whose last batch survives
	// cleaning. nil: none.
	ProducerLast func(producerID int64) (int64, bool)
	// ProducerEpoch is compact.Rules.ProducerEpoch: each active
	// producer's current epoch. nil: not known.
	ProducerEpoch func(producerID int64) (int16, bool)
}

// Progress is where a compacted log stands: what is clean, what is dirty,
// and whether a round would run now (Kafka's LogToClean and
// cleanableOffsets).
type Progress struct {
	FirstDirty       int64 // the cleaner checkpoint, within the log
	FirstUncleanable int64 // the active segment, the bound or min.compaction.lag.ms
	CleanBytes       int64 // inactive segments below FirstDirty
	DirtyBytes       int64 // segments in [FirstDirty, FirstUncleanable)
	// Ratio is DirtyBytes / (CleanBytes + DirtyBytes), Kafka's
	// cleanableRatio, compared with min.cleanable.dirty.ratio.
	Ratio float64
	// Overdue: a dirty segment's first batch is older than
	// max.compaction.lag.ms, so the log is cleaned below the ratio.
	Overdue bool
	// Cleanable: compacted, something dirty, and the ratio reached or
	// overdue.
	Cleanable bool
}

// Examine computes the Progress of t at now. segs are the log's inactive
// segments (t.Log must be Compactable; otherwise nothing is cleanable).
func Examine(t Target, now time.Time) (Progress, []engine.SegmentInfo) {
	c, ok := t.Log.(engine.Compactable)
	if !ok || !t.Config.Compact {
		return Progress{}, nil
	}
	segs := c.InactiveSegments()
	start, end := t.Log.StartOffset(), t.Log.EndOffset()
	p := Progress{FirstDirty: c.CleanerCheckpoint()}
	if p.FirstDirty < start || p.FirstDirty > end {
		// Never cleaned, truncated below it, or DeleteRecords past it:
		// start over from the log start, as Kafka does.
		p.FirstDirty = start
	}
	if len(segs) == 0 {
		p.FirstUncleanable = p.FirstDirty
		return p, nil
	}
	p.FirstUncleanable = segs[len(segs)-1].Next
	nowMs := now.UnixMilli()
	minLag := t.Config.MinCompactionLag.Milliseconds()
	for _, s := range segs {
		if s.Next <= p.FirstDirty {
			continue
		}
		if (t.Bound >= 0 && s.Next > t.Bound) || (minLag > 0 && s.LargestTimestamp > nowMs-minLag) {
			p.FirstUncleanable = s.Base
			break
		}
	}
	if p.FirstUncleanable < p.FirstDirty {
		p.FirstUncleanable = p.FirstDirty
	}
	maxLag := t.Config.MaxCompactionLag
	for _, s := range segs {
		switch {
		case s.Next <= start:
		case s.Next <= p.FirstDirty:
			p.CleanBytes += s.Bytes
		case s.Base < p.FirstUncleanable:
			p.DirtyBytes += s.Bytes
			if maxLag > 0 && maxLag != engine.NoMaxCompactionLag && s.FirstBatchTimestamp >= 0 &&
				nowMs-s.FirstBatchTimestamp > maxLag.Milliseconds() {
				p.Overdue = true
			}
		}
	}
	if total := p.CleanBytes + p.DirtyBytes; total > 0 {
		p.Ratio = float64(p.DirtyBytes) / float64(total)
	}
	// Kafka: cleanableRatio > minCleanableRatio, or needCompactionNow.
	p.Cleanable = p.DirtyBytes > 0 && (p.Ratio > t.Config.MinCleanableDirtyRatio || p.Overdue)
	return p, segs
}

// Result is what one round did.
type Result struct {
	Progress  Progress
	CleanedTo int64 // the new cleaner checkpoint: the map's end
	Groups    int   // segment groups rewritten
	Segments  int   // segments read in the second pass
	Stats     compact.Stats
	BuildRead int64 // bytes read by the first pass
	Took      time.Duration
}

// readChunk is how much of a log a pass reads at a time (at least one
// batch, KIP-74, however large).
const readChunk = 1 << 20

// Cleaner is one cleaner thread's state: its offset map and buffers.
// Not safe for concurrent use.
type Cleaner struct {
	m        *compact.OffsetMap
	c        compact.Cleaner
	in, out  []byte
	throttle func(n int64)   // nil: unthrottled
	stop     <-chan struct{} // closed: abandon the round (errStopped)
}

// New returns a Cleaner whose offset map uses memory bytes (Kafka's
// log.cleaner.dedupe.buffer.size / log.cleaner.threads). throttle, if
// not nil, is called with each I/O's byte count and may sleep.
func New(memory int, throttle func(n int64)) (*Cleaner, error) {
	if memory/compact.BytesPerEntry < 2 {
		return nil, fmt.Errorf("cleaner: dedupe buffer of %d bytes per thread holds no key", memory)
	}
	return &Cleaner{m: compact.NewOffsetMap(memory), throttle: throttle}, nil
}

// MapSlots is the offset map's capacity, for logs and benchmarks.
func (c *Cleaner) MapSlots() int { return c.m.Slots() }

// Clean runs one round on t at now if t is cleanable (Result.CleanedTo is
// then past Progress.FirstDirty), or does nothing. Errors: the log's (a
// closed log gives engine.ErrClosed), engine.ErrCleanConflict when the
// log changed under the round, compact.ErrCorrupt for damaged batches.
func (c *Cleaner) Clean(t Target, now time.Time) (Result, error) {
	began := time.Now()
	p, segs := Examine(t, now)
	res := Result{Progress: p, CleanedTo: p.FirstDirty}
	if !p.Cleanable {
		return res, nil
	}
	comp := t.Log.(engine.Compactable)
	if err := c.loadAborted(t.Log, p.FirstUncleanable); err != nil {
		return res, err
	}
	end, read, err := c.build(t.Log, p.FirstDirty, p.FirstUncleanable)
	res.BuildRead = read
	if err != nil {
		return res, err
	}
	if end <= p.FirstDirty {
		return res, nil
	}
	rules := compact.Rules{
		Now:               now.UnixMilli(),
		DeleteRetentionMs: t.Config.DeleteRetention.Milliseconds(),
		ProducerLast:      t.ProducerLast,
		ProducerEpoch:     t.ProducerEpoch,
	}
	// Kafka's upperBoundOffsetOfCleaningRound: the round's last batch
	// stays even if emptied, so that the cleaned part still ends where
	// the round did; no other batch is kept empty but a producer's last
	// (Rules.ProducerLast). Each group's own last batch is not kept:
	// that left an empty batch in every rewritten segment, and runs of
	// 61-byte segments that consumers such as librdkafka stall on.
	rules.UpperBound = p.FirstUncleanable
	gs := groups(segs, end, p.FirstUncleanable, t.Config.SegmentBytes, t.Config.IndexMaxBytes, t.Config.IndexIntervalBytes)
	for k, g := range gs {
		checkpoint := int64(-1)
		if k == len(gs)-1 {
			// The last group's commit moves the checkpoint with it,
			// so that no truncation comes between the two.
			checkpoint = end
		}
		st, err := c.rewrite(t.Log, comp, g, &rules, checkpoint)
		addStats(&res.Stats, st)
		if err != nil {
			return res, err
		}
		res.Groups++
		res.Segments += g.n
	}
	if len(gs) == 0 {
		if err := comp.SetCleanerCheckpoint(end); err != nil {
			return res, err
		}
	}
	res.CleanedTo = end
	res.Took = time.Since(began)
	return res, nil
}

// loadAborted gives the compact core the aborted transactions of the log
// below to (from its engine.TxnIndex, if it keeps one): their records are
// neither mapped nor kept.
func (c *Cleaner) loadAborted(l engine.Log, to int64) error {
	c.c.SetAborted(nil)
	ti, ok := l.(engine.TxnIndex)
	if !ok {
		return nil
	}
	txns, err := ti.AbortedTxns(l.StartOffset(), to)
	if err != nil {
		return err
	}
	list := make([]compact.AbortedTxn, len(txns))
	for i, t := range txns {
		list[i] = compact.AbortedTxn{ProducerID: t.ProducerID, FirstOffset: t.FirstOffset, LastOffset: t.LastOffset}
	}
	c.c.SetAborted(list)
	return nil
}

// build is the first pass over [from, to): it fills the map and returns
// where it ends (the next round's start) and the bytes it read.
func (c *Cleaner) build(l engine.Log, from, to int64) (end, read int64, err error) {
	c.m.Clear()
	for off := from; off < to; {
		n, next, err := c.readAt(l, off, to)
		read += n
		if err != nil {
			return 0, read, err
		}
		if n == 0 {
			break
		}
		last, full, err := c.c.Build(c.m, c.in, from)
		if err != nil {
			return 0, read, err
		}
		if full {
			return last + 1, read, nil
		}
		off = next
	}
	// The whole dirty range fit: it is clean up to its end, a segment
	// boundary, even where its last batches were removed before (Kafka's
	// updateLatestOffset to the next segment's start), or the next round
	// would find it dirty again and read nothing.
	return to, read, nil
}

// readAt reads whole batches from off, ending before to, into c.in and
// returns their size and the offset after the last one.
func (c *Cleaner) readAt(l engine.Log, off, to int64) (int64, int64, error) {
	select {
	case <-c.stop:
		return 0, off, errStopped
	default:
	}
	s, err := l.Read(off, readChunk, to)
	if err != nil {
		return 0, off, err
	}
	c.in, err = s.AppendTo(c.in[:0])
	s.Release()
	if err != nil {
		return 0, off, err
	}
	n := int64(len(c.in))
	if c.throttle != nil && n > 0 {
		c.throttle(n)
	}
	next := off
	for pos := 0; pos < len(c.in); {
		size, ok := record.PeekSize(c.in[pos:])
		if !ok || size < record.HeaderSize || size > len(c.in)-pos {
			return n, off, fmt.Errorf("%w: read at offset %d returned a torn batch at byte %d", compact.ErrCorrupt, off, pos)
		}
		next = record.Batch(c.in[pos:]).NextOffset()
		pos += size
	}
	if next <= off && n > 0 {
		return n, off, fmt.Errorf("%w: read at offset %d made no progress", compact.ErrCorrupt, off)
	}
	return n, next, nil
}

// group is consecutive inactive segments rewritten into one.
type group struct {
	from, to int64 // first Base, last Next
	n        int
}

// timeIndexEntrySize is the size of a time index entry (8-byte timestamp,
// 4-byte relative offset), the larger of the two indexes' entries.
const timeIndexEntrySize = 12

// indexEntries bounds the index entries of a segment of size bytes: at
// most one per index.interval.bytes of log, and one per batch (a batch is
// at least record.HeaderSize bytes), plus the entry a roll adds.
func indexEntries(size int64, interval int) int64 {
	return size/int64(max(interval, record.HeaderSize)) + 1
}

// groups splits the segments from the log start up to the one holding
// end-1 into runs to rewrite as one segment each, as Kafka's
// groupSegmentsBySize: a segment joins the run before it while the run's
// bytes stay within maxBytes (segment.bytes), its indexes within
// maxIndexBytes (segment.index.bytes; entries are bounded by
// indexEntries, an upper bound of what the cleaned segment's index can
// need, for the backends have no index sizes to report), and its offsets
// relative to the run's base within an int32 (an empty segment needs no
// index, so it joins regardless, as in Kafka). maxIndexBytes <= 0: no
// index limit. uncleanable is the round's
// first uncleanable offset, the bound of the last segment.
func groups(segs []engine.SegmentInfo, end, uncleanable, maxBytes int64, maxIndexBytes, interval int) []group {
	var out []group
	var cur group
	var size, entries int64
	for i, s := range segs {
		if s.Base >= end {
			break
		}
		// Kafka's lastOffsetForFirstSegment: the next segment's base
		// (or the first uncleanable offset) less one.
		last := s.Next - 1
		if i == len(segs)-1 {
			last = min(last, uncleanable-1)
		}
		e := indexEntries(s.Bytes, interval)
		if cur.n > 0 && (size+s.Bytes > maxBytes ||
			(maxIndexBytes > 0 && (entries+e)*timeIndexEntrySize > int64(maxIndexBytes)) ||
			(s.Bytes > 0 && last-cur.from > math.MaxInt32)) {
			out = append(out, cur)
			cur = group{}
		}
		if cur.n == 0 {
			cur.from, size, entries = s.Base, 0, 0
		}
		cur.to = s.Next
		cur.n++
		size += s.Bytes
		entries += e
	}
	if cur.n > 0 {
		out = append(out, cur)
	}
	return out
}

// rewrite is the second pass over one group.
func (c *Cleaner) rewrite(l engine.Log, comp engine.Compactable, g group, r *compact.Rules, checkpoint int64) (compact.Stats, error) {
	var total compact.Stats
	w, err := comp.ReplaceSegments(g.from, g.to)
	if err != nil {
		return total, err
	}
	defer w.Abort()
	if checkpoint >= 0 {
		w.SetCheckpoint(checkpoint)
	}
	off := max(g.from, l.StartOffset())
	for off < g.to {
		n, next, err := c.readAt(l, off, g.to)
		if err != nil {
			if errors.Is(err, engine.ErrOffsetOutOfRange) {
				// Retention or DeleteRecords moved the start past
				// the group under us.
				return total, fmt.Errorf("%w: %v", engine.ErrCleanConflict, err)
			}
			return total, err
		}
		if n == 0 {
			break
		}
		var st compact.Stats
		c.out, st, err = c.c.Filter(c.out[:0], c.m, c.in, r)
		addStats(&total, st)
		if err != nil {
			return total, err
		}
		if len(c.out) > 0 {
			if err := w.Write(c.out); err != nil {
				return total, err
			}
			if c.throttle != nil {
				c.throttle(int64(len(c.out)))
			}
		}
		off = next
	}
	return total, w.Commit()
}

func addStats(dst *compact.Stats, s compact.Stats) {
	dst.BatchesRead += s.BatchesRead
	dst.BatchesWritten += s.BatchesWritten
	dst.BatchesCopied += s.BatchesCopied
	dst.BatchesEmptied += s.BatchesEmptied
	dst.RecordsRead += s.RecordsRead
	dst.RecordsKept += s.RecordsKept
	dst.KeylessDropped += s.KeylessDropped
	dst.BytesRead += s.BytesRead
	dst.BytesWritten += s.BytesWritten
}
