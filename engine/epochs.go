package engine

import "sort"

// EpochCache is the leader epoch history of a log, as Kafka's
// LeaderEpochFileCache keeps it: ascending epochs, each with the first offset
// written in that epoch. Backends keep one per log and persist it their own
// way (the segment backend in leader-epoch-checkpoint). Not safe for
// concurrent use; the owning log guards it.
//
// Invariant: entries are strictly ascending in both Epoch and StartOffset.
type EpochCache struct {
	entries []EpochEntry
}

// NewEpochCache returns a cache holding entries, which must satisfy the
// invariant (a damaged checkpoint is sanitized by dropping what breaks it).
func NewEpochCache(entries []EpochEntry) *EpochCache {
	c := &EpochCache{}
	for _, e := range entries {
		c.Assign(e.Epoch, e.StartOffset)
	}
	return c
}

// Assign records that epoch begins at start, if epoch is newer than the
// latest known one. An entry for an epoch whose start offset is not above
// the previous one replaces it (the previous epoch wrote nothing). It
// reports whether the cache changed. Epochs below zero are ignored (batches
// from clients that never set one).
func (c *EpochCache) Assign(epoch int32, start int64) bool {
	if epoch < 0 {
		return false
	}
	n := len(c.entries)
	if n > 0 {
		last := c.entries[n-1]
		if epoch <= last.Epoch {
			return false
		}
		// Drop entries that would not be strictly ascending in offset.
		for len(c.entries) > 0 && c.entries[len(c.entries)-1].StartOffset >= start {
			c.entries = c.entries[:len(c.entries)-1]
		}
	}
	c.entries = append(c.entries, EpochEntry{Epoch: epoch, StartOffset: start})
	return true
}

// TruncateFromEnd drops every entry that starts at or after end (the log was
// truncated to end). It reports whether the cache changed.
func (c *EpochCache) TruncateFromEnd(end int64) bool {
	n := len(c.entries)
	for len(c.entries) > 0 && c.entries[len(c.entries)-1].StartOffset >= end {
		c.entries = c.entries[:len(c.entries)-1]
	}
	return len(c.entries) != n
}

// TruncateFromStart moves the history's start to start (the log start
// offset advanced): entries wholly below it go, the one that covers it
// starts at start. It reports whether the cache changed.
func (c *EpochCache) TruncateFromStart(start int64) bool {
	i := 0
	for i+1 < len(c.entries) && c.entries[i+1].StartOffset <= start {
		i++
	}
	changed := i > 0
	c.entries = c.entries[i:]
	if len(c.entries) > 0 && c.entries[0].StartOffset < start {
		c.entries[0].StartOffset = start
		changed = true
	}
	return changed
}

// Entries returns a copy of the history.
func (c *EpochCache) Entries() []EpochEntry {
	return append([]EpochEntry(nil), c.entries...)
}

// Latest returns the newest epoch, or -1 when there is none.
func (c *EpochCache) Latest() int32 {
	if len(c.entries) == 0 {
		return -1
	}
	return c.entries[len(c.entries)-1].Epoch
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch (KIP-101, KIP-279) from a
// history and the log end offset, as Kafka's LeaderEpochFileCache.endOffsetFor
// does:
//   - the latest epoch: (epoch, logEnd);
//   - an epoch the history holds, or one between two it holds: the largest
//     epoch <= epoch, and the start offset of the first epoch above it;
//   - an epoch older than the whole history (its entries went with the log
//     start): (epoch, start offset of the first entry), so a follower
//     truncates to where the leader's known history begins;
//   - an epoch newer than the latest, an empty history, or epoch < 0:
//     (-1, -1), UNDEFINED (a leader's own epoch is always its latest, so a
//     follower never sees this from a live leader).
func EndOffsetForEpoch(entries []EpochEntry, epoch int32, logEnd int64) (int32, int64) {
	n := len(entries)
	if epoch < 0 || n == 0 {
		return -1, -1
	}
	if entries[n-1].Epoch == epoch {
		return epoch, logEnd
	}
	// higher: the first entry with an epoch above the asked one.
	higher := n
	for higher > 0 && entries[higher-1].Epoch > epoch {
		higher--
	}
	switch {
	case higher == n:
		return -1, -1
	case higher == 0:
		return epoch, entries[0].StartOffset
	}
	return entries[higher-1].Epoch, entries[higher].StartOffset
}

// EpochForOffset is Kafka's LeaderEpochFileCache.epochForOffset over
// entries (ascending): the epoch of the entry starting at offset, else of
// the last entry starting before it; false when offset lies before the
// first entry or there is none.
func EpochForOffset(entries []EpochEntry, offset int64) (int32, bool) {
	i := sort.Search(len(entries), func(i int) bool { return entries[i].StartOffset > offset })
	if i == 0 {
		return -1, false
	}
	return entries[i-1].Epoch, true
}
