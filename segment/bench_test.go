package segment

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

// benchBatch builds an uncompressed batch of about size bytes (records of
// ~1 KiB, or one record for small sizes).
func benchBatch(size int) []byte {
	rng := rand.New(rand.NewSource(int64(size)))
	recSize := min(1000, size-100)
	n := max(1, size/(recSize+20))
	return mkBatch(rng, n, 1_700_000_000_000, recSize)
}

var benchSizes = []struct {
	name string
	size int
}{{"1KiB", 1 << 10}, {"16KiB", 16 << 10}, {"1MiB", 1 << 20}}

// BenchmarkAppend measures Log.Append of one batch per call with Kafka's
// defaults (no fsync). Target: 0 allocs/op.
func BenchmarkAppend(b *testing.B) {
	for _, bs := range benchSizes {
		b.Run("batch="+bs.name, func(b *testing.B) {
			st := openStore(b, b.TempDir(), nil)
			defer st.Close()
			l, err := st.CreateLog(tp, engine.LogConfig{SegmentBytes: 256 << 20})
			if err != nil {
				b.Fatal(err)
			}
			batch := benchBatch(bs.size)
			opts := engine.AppendOptions{AssignOffsets: true, LeaderEpoch: 1}
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := l.Append(batch, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRead measures sequential Log.Read with maxBytes=1MiB over a log
// of 16 KiB batches: mode=slice is what the sendfile path costs (index
// lookup, header scan, slice); mode=copy also copies the bytes out.
func BenchmarkRead(b *testing.B) {
	st := openStore(b, b.TempDir(), nil)
	defer st.Close()
	l, err := st.CreateLog(tp, engine.LogConfig{SegmentBytes: 64 << 20})
	if err != nil {
		b.Fatal(err)
	}
	batch := benchBatch(16 << 10)
	for l.Size() < 128<<20 {
		if _, err := l.Append(batch, engine.AppendOptions{AssignOffsets: true}); err != nil {
			b.Fatal(err)
		}
	}
	for _, mode := range []string{"slice", "copy"} {
		b.Run("batch=16KiB/maxBytes=1MiB/mode="+mode, func(b *testing.B) {
			var buf []byte
			off := int64(0)
			b.ReportAllocs()
			var n int64
			for b.Loop() {
				if off >= l.EndOffset() {
					off = 0
				}
				s, err := l.Read(off, 1<<20, -1)
				if err != nil {
					b.Fatal(err)
				}
				n += s.Len()
				if mode == "copy" {
					if buf, err = s.AppendTo(buf[:0]); err != nil {
						b.Fatal(err)
					}
					off = lastBatch(buf).NextOffset()
				} else {
					// Find the next offset from the last batch header.
					var hdr [record.HeaderSize]byte
					f, pos, ln, _ := s.File()
					f.ReadAt(hdr[:], pos+ln-int64(len(batch)))
					off = record.Batch(hdr[:]).NextOffset()
				}
				s.Release()
			}
			b.SetBytes(n / int64(b.N))
		})
	}
}

// BenchmarkRecover measures crash recovery: a 256 MiB log of 16 KiB
// batches with no recovery point is validated (CRC, records, offsets) and
// its indexes rebuilt on every iteration. MB/s is the recovery rate; s/GiB
// its inverse.
func BenchmarkRecover(b *testing.B) {
	const logBytes = 256 << 20
	dir := b.TempDir()
	st := openStore(b, dir, nil)
	l, err := st.CreateLog(tp, engine.LogConfig{})
	if err != nil {
		b.Fatal(err)
	}
	batch := benchBatch(16 << 10)
	for l.Size() < logBytes {
		if _, err := l.Append(batch, engine.AppendOptions{AssignOffsets: true}); err != nil {
			b.Fatal(err)
		}
	}
	end := l.EndOffset()
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	b.Run(fmt.Sprintf("size=%dMiB", logBytes>>20), func(b *testing.B) {
		b.SetBytes(logBytes)
		b.ReportAllocs()
		for b.Loop() {
			// Forget the clean shutdown and the recovery point.
			os.Remove(filepath.Join(dir, cleanShutdownFile))
			os.Remove(filepath.Join(dir, recoveryPointFile))
			st := openStore(b, dir, nil)
			l, err := st.OpenLog(tp, engine.LogConfig{})
			if err != nil {
				b.Fatal(err)
			}
			if l.EndOffset() != end {
				b.Fatalf("recovered to %d, want %d", l.EndOffset(), end)
			}
			st.Close()
		}
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)*float64(1<<30)/logBytes, "s/GiB")
	})
}
