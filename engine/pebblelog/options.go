package pebblelog

import (
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Pebble resource limits: modest, since the broker shares the machine with
// the page cache that serves fetches.
const (
	cacheBytes    = 64 << 20
	memTableBytes = 32 << 20
)

// Value separation (Pebble's blob files). A flush writes every value of at
// least blobMinValueBytes (in practice: the stored RecordBatches; summaries
// and metadata are 8-40 bytes) into a blob file once, and the sstables keep
// a small handle. Compactions then move keys and handles only, instead of
// rewriting every record batch at each level they pass through.
//
// Why: a profile of `sluice serve` under 1 KiB produce (BENCHMARKS.md,
// "Pebble backend produce (issue 16)") spent about a third of the broker's
// CPU in compactions rewriting batches (write(2), memmove, Snappy encode
// and decode) and another sixth in flushes: every appended byte was
// written by the WAL, the flush and every compaction after it.
// Compactions find the batch keys of consecutive flushes overlapping (each
// flush holds 0x04..0x06 keys of the same partitions), so they cannot
// simply move files down a level.
//
// A blob file whose values are all deleted (retention's range deletes,
// Truncate, DeleteLog) is removed once no sstable refers to it; one holding
// garbage and live values is rewritten once blobTargetGarbageRatio of it
// is garbage and it is blobRewriteAge old.
const (
	blobMinValueBytes      = 256
	blobMaxReferenceDepth  = 10
	blobRewriteAge         = 5 * time.Minute
	blobTargetGarbageRatio = 0.5
)

// pebbleOptions returns the options every store is opened with.
//
// Blocks keep Pebble's default Snappy compression. Turning it off (the
// values are RecordBatches, compressed already when the producer
// compresses) was measured and lost: `sluice perf`'s records repeat one
// random filler, so Snappy halves what the flushes write, and on this
// shared machine a written byte (write(2), page-cache allocation,
// writeback by the WAL's fdatasync) costs the broker more CPU than Snappy
// does: 809-1076 ticks of broker CPU for 2.4 GB without compression
// against 578-633 with it (BENCHMARKS.md, issue 16 section).
//
// Stores were always opened at FormatNewest, which is FormatValueSeparation
// in the Pebble release we build with (v2.1), so blob files need no format
// change of Pebble's or ours: builds before this one read them, and the
// values of an older store move to blob files as compactions rewrite them.
func pebbleOptions(cache *pebble.Cache, logger *slog.Logger) *pebble.Options {
	o := &pebble.Options{
		Cache:              cache,
		MemTableSize:       memTableBytes,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             pebbleLogger{logger},
	}
	o.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy {
		return pebble.ValueSeparationPolicy{
			Enabled:               true,
			MinimumSize:           blobMinValueBytes,
			MaxBlobReferenceDepth: blobMaxReferenceDepth,
			RewriteMinimumAge:     blobRewriteAge,
			TargetGarbageRatio:    blobTargetGarbageRatio,
		}
	}
	return o
}
