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
// least blobMinValueBytes (in practice: RecordBatches stored inline by
// format version 1, and producer snapshots; batch pointers, summaries and
// metadata are 8-40 bytes) into a blob file once, and the sstables keep a
// small handle. Since format version 2 new batches live in data files and
// this matters only for stores written before. Compactions then move keys and handles only, instead of
// rewriting every record batch at each level they pass through.
//
// Why: a profile of `sluice serve` under 1 KiB produce (BENCHMARKS.md,
// "Pebble backend produce") spent about a third of the broker's
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
	blobMinValueBytes = 256
	// blobMaxReferenceDepth: a compaction whose outputs would refer to
	// more overlapping blob files than this rewrites the values into new
	// blob files (read locality). Pebble's own tool uses 10; with 64 MiB
	// sstables each L0 -> L6 compaction then went over it and rewrote
	// every batch again: compactions were 30-35% of the broker's CPU
	// (profile of 1.2M 1 KiB records to 1 partition, acks=1, then to 4,
	// acks=all) against 5-13% with 100, and the broker used 459-463 ticks
	// of CPU for the 2.4 GB against 271-360. A log's batches are read in
	// offset order, which is flush order, so referring to many blob files
	// costs a fetch little: each Read goes through them in sequence.
	blobMaxReferenceDepth  = 100
	blobRewriteAge         = 5 * time.Minute
	blobTargetGarbageRatio = 0.5
)

// l0TargetFileBytes is Pebble's TargetFileSizes[0] (default 2 MiB; each
// level below doubles it); 64 MiB is RocksDB's default. Pebble sizes an
// output sstable by its keys plus the blob values it refers to, so with
// 1 MiB batches the default cut flush and compaction outputs every 2-4
// batches into sstables of about 1 KB, and creating and syncing those files
// was most of what compactions still cost. BenchmarkAppendLSM, sstables
// written per GB appended to one log, and utime+stime of the run:
//
//	target    1.2 GB appended              9.6 GB appended
//	2 MiB     700                          -
//	16 MiB    276, 1.74 s / 2.44 s         1001, 17.5 s
//	64 MiB    103, 1.71 s / 2.49 s          576, 17.0 s
//	before value separation (2 MiB, Snappy): 108 per GB, 20.5 s at 9.6 GB
//
// With blobMaxReferenceDepth 100 the 9.6 GB run took 13.9 s and 17.0 s
// against 15.0 s before value separation in the same sitting: in one big
// log the gain is gone or lost in the noise, likely because the count per
// GB still grows with the log: every flush holds the newest keys of tags
// 0x04, 0x05 and 0x06, so its key range spans all the older batch keys of
// the log, and the L0 -> L6 compaction rewrites (keys and handles only)
// every sstable in between. Only a key layout whose new keys
// sort after the old ones would stop that.
const l0TargetFileBytes = 64 << 20

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
// without compression against 578-633 with Snappy (BENCHMARKS.md,
// "Pebble backend produce"). For producers that compress their batches, compressing again
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
