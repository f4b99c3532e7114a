package memlog

import (
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

// chunk is the in-memory stand-in for one segment. It covers the offsets
// [base, next); since a follower copies a compacted leader's gaps and the
// cleaner removes batches, the batches need not fill that range.
//
// Its batches lie back to back in blocks, a batch never split between two
// blocks. A block is one allocation that is never grown or copied: a batch
// that does not fit in the room left in the last block goes to a new block
// (see newBlock for the sizes), so an append copies each byte once.
// Growing one buffer per chunk by doubling, as this package did before,
// copied every byte about once more and touched twice the fresh memory,
// which on a produce benchmark was half of the broker's CPU (page faults
// and clearing pages; BENCHMARKS.md, issue 33 point 4).
//
// Invariants: index[i] describes blocks[index[i].blk][index[i].pos:index[i].end];
// index[i].last < index[i+1].base (increasing, gaps allowed); batches are
// back to back inside a block, and index[i+1] either follows index[i] in the
// same block or starts the next block at pos 0; every block holds at least
// one batch; bytes == the sum of index[i].end - index[i].pos;
// capacity - bytes <= bytes + minBlock, except after a Truncate cut into
// a block, when newBlock adds no room until bytes grows back to it;
// base <= index[0].base and index[len-1].last < next. A chunk may hold no
// batch (a cleaned group left empty, or a Truncate into a gap). The block
// elements are never reassigned once published and the bytes of published
// batches are never written again (see the package doc): the next batch
// goes only into room.
type chunk struct {
	base, next int64
	blocks     [][]byte
	// room is the unwritten end of the last block, where the next batch
	// goes when it fits; nil when the last block must not be written:
	// after a Truncate cut batches off it (a reader may still hold their
	// bytes, and the next batch would not follow the last one kept), and
	// in a cleaned chunk.
	room      []byte
	bytes     int64 // batch bytes held: what the chunk counts for as a segment
	capacity  int64 // sum of len(blocks[i]): bytes held plus room left unused
	index     []entry
	maxTs     int64     // largest batch maxTimestamp, -1 when none
	created   time.Time // first append, for segment.ms
	lastWrite time.Time // last append, the retention time when maxTs < 0
}

// entry locates one batch in its chunk.
type entry struct {
	base, last int64 // first and last offset of the batch
	maxTs      int64 // the batch's maxTimestamp
	blk        int   // index in chunk.blocks
	pos, end   int   // byte range in chunk.blocks[blk]
}

// Block sizes. A chunk's first block is minBlock (so an idle partition
// holds 64 KiB, as before), each next one as large as the chunk so far up
// to maxBlock, and never more than the chunk can still take before it
// rolls. A batch of
// more than an eighth of that gets a block of its own, exactly its size,
// so that the room a block leaves unused when the next batch does not fit
// stays under an eighth of it.
const (
	minBlock = 64 << 10
	maxBlock = 4 << 20
)

// retentionTime is the time (ms) retention.ms measures a chunk by: its
// largest timestamp, or its last write when no batch carried one, as Kafka
// measures a segment.
func (c *chunk) retentionTime() int64 {
	if c.maxTs >= 0 {
		return c.maxTs
	}
	return c.lastWrite.UnixMilli()
}

// batch returns the bytes of the batch e describes.
func (c *chunk) batch(e entry) record.Batch {
	return record.Batch(c.blocks[e.blk][e.pos:e.end])
}

// rolls reports whether a batch of size bytes must go to a new chunk:
// this one is not empty and would pass segment.bytes, or is segment.ms old.
func (c *chunk) rolls(size int, now time.Time, cfg engine.LogConfig) bool {
	return c.bytes > 0 && (c.bytes+int64(size) > cfg.SegmentBytes || now.Sub(c.created) >= cfg.RollAge())
}

// push appends batch b to the chunk's blocks and index. segmentBytes
// bounds the block sizes (the chunk rolls there). REQUIRES: the log's
// writeMu held, and c either unpublished or a private copy of the
// published chunk (its blocks array may be shared: push only appends to
// it, past the published length).
func (c *chunk) push(b record.Batch, now time.Time, segmentBytes int64) {
	e := entry{base: b.BaseOffset(), last: b.LastOffset(), maxTs: b.MaxTimestamp()}
	if len(b) <= len(c.room) {
		e.blk = len(c.blocks) - 1
		e.pos = len(c.blocks[e.blk]) - len(c.room)
		copy(c.room, b)
		c.room = c.room[len(b):]
	} else {
		var blk []byte
		blk, c.room = c.newBlock(b, segmentBytes)
		e.blk = len(c.blocks)
		c.blocks = append(c.blocks, blk)
		c.capacity += int64(len(blk))
	}
	e.end = e.pos + len(b)
	c.index = append(c.index, e)
	c.bytes += int64(len(b))
	c.next = e.last + 1
	c.lastWrite = now
	if e.maxTs > c.maxTs {
		c.maxTs = e.maxTs
	}
}

// newBlock returns a new block holding b at its start, and the room left
// after b. A block for b alone is allocated by append, which leaves the
// bytes it copies uncleared; a shared block is cleared first (make).
//
// The room a chunk leaves unused (capacity - bytes) is kept under its
// bytes plus minBlock: a Truncate takes the last block's room away, so
// without the bound a follower that truncates after every few appends
// would leave a block of 64 KiB to 4 MiB per small batch; past it,
// batches get blocks of their own size.
func (c *chunk) newBlock(b []byte, segmentBytes int64) (blk, room []byte) {
	budget := max(c.bytes+minBlock-(c.capacity-c.bytes), 0)
	size := min(max(c.bytes, minBlock), maxBlock, max(segmentBytes-c.bytes, 0), int64(len(b))+budget)
	if int64(len(b)) > size/8 {
		return append([]byte(nil), b...), nil
	}
	blk = make([]byte, int(size))
	copy(blk, b)
	return blk, blk[len(b):]
}
