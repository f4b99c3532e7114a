package pebblelog

import (
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
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

// l0TargetFileBytes is Pebble's TargetFileSizes[0] (default 2 MiB; each
// level below doubles it). Pebble sizes an output sstable by its keys plus
// the blob values it refers to, so with 1 MiB batches the default cut a
// flush or compaction output every 2-4 batches into sstables of about 1 KB,
// and creating and syncing those files was most of what compactions still
// cost. BenchmarkAppendLSM (1.2 GB of 1 MiB appends to one log): 700
// sstables written per GB with the default, 276 with 16 MiB (one L0 table
// per flush); the whole process used 15-20% less CPU (1.82-1.96 s against
// 2.2-2.42 s utime+stime, 3 runs each, alternating). 64 MiB cut the files
// again without a CPU difference we could measure, and would make the
// compactions of small, inline values coarser.
const l0TargetFileBytes = 16 << 20

// pebbleOptions returns the options every store is opened with.
//
// Blocks (sstables and blob files) are compressed with MinLZ instead of
// Pebble's default Snappy: the same job for less CPU. BenchmarkAppendLSM
// (1.2 GB), 3 alternating runs each: 2.15-2.27 s utime+stime with MinLZ
// against 2.30-2.86 s with Snappy, and 4% fewer bytes written. No
// compression at all was measured and lost: `sluice perf`'s records
// repeat one random filler, so compression halves what the flushes write,
// and on this shared machine a written byte (write(2), page-cache
// allocation, writeback by the WAL's fdatasync) costs the broker more CPU
// than compressing it: 809-1076 ticks of broker CPU for 2.4 GB produced
// without compression against 578-633 with Snappy (BENCHMARKS.md, issue 16
// section). For producers that compress their batches, compressing again
// here is wasted CPU (not measured: sluice perf has no such mode yet).
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
	o.TargetFileSizes[0] = l0TargetFileBytes
	o.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy {
		return pebble.ValueSeparationPolicy{
			Enabled:               true,
			MinimumSize:           blobMinValueBytes,
			MaxBlobReferenceDepth: blobMaxReferenceDepth,
			RewriteMinimumAge:     blobRewriteAge,
			TargetGarbageRatio:    blobTargetGarbageRatio,
		}
	}
	for i := range o.Levels {
		o.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.MinLZCompression }
	}
	return o
}
