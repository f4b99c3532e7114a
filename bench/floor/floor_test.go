package floor

import (
	"encoding/json"
	"testing"
)

// BenchmarkFloor runs every mode over b.N frames of 1 MiB (4 batches of
// 1 KiB records) and reports the reader thread's CPU per GB:
//
//	go test -run '^$' -bench Floor -benchtime 2000x ./bench/floor/
func BenchmarkFloor(b *testing.B) {
	for _, m := range append(Modes[:len(Modes):len(Modes)], SpliceModes...) {
		b.Run("mode="+m, func(b *testing.B) {
			frame := 1 << 20
			b.SetBytes(int64(frame))
			res, err := Run(Config{Mode: m, Dir: b.TempDir(), FrameBytes: frame, TotalBytes: int64(b.N) * int64(frame), ReaderCPU: -1, WriterCPU: -1})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(res.CPUPerGB, "cpu-s/GB")
			b.ReportMetric(float64(res.Reads)/float64(b.N), "reads/frame")
		})
	}
}

// TestFloorModes: every mode reads and stores what the writer sent (the
// splice modes check each landed batch's CRC in the file).
func TestFloorModes(t *testing.T) {
	for _, m := range append(Modes[:len(Modes):len(Modes)], SpliceModes...) {
		res, err := Run(Config{Mode: m, Dir: t.TempDir(), TotalBytes: 64 << 20, FileBytes: 8 << 20, ReaderCPU: -1, WriterCPU: -1})
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if res.Bytes < 60<<20 || res.Reads == 0 || res.CPUSeconds < 0 {
			t.Fatalf("%s: %+v", m, res)
		}
	}
	// Less than a frame still reads one: finite figures, as JSON needs.
	res, err := Run(Config{Mode: "crc", TotalBytes: 1000, ReaderCPU: -1, WriterCPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := json.Marshal(res); err != nil || res.Bytes == 0 {
		t.Fatalf("a run under one frame: %+v (%v)", res, err)
	}
	if _, err := Run(Config{Mode: "nope"}); err == nil {
		t.Fatal("unknown mode accepted")
	}
}

// TestSpliceFrameSizes: the splice modes land batches larger than the pipe
// (4 MiB frames of 1 MiB batches: several splices per batch) and batches
// of a few hundred bytes, and every landed batch passes its CRC in the file.
func TestSpliceFrameSizes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		frame, size int
	}{
		{"1MiB-batches", 4 << 20, 1024},
		{"small-batches", 4 << 10, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, m := range []string{"splice", "splice-reserve"} {
				res, err := Run(Config{Mode: m, Dir: t.TempDir(), FrameBytes: tc.frame, RecordSize: tc.size, TotalBytes: 16 << 20, FileBytes: 4 << 20, ReaderCPU: -1, WriterCPU: -1})
				if err != nil {
					t.Fatalf("%s: %v", m, err)
				}
				if res.Bytes < 14<<20 {
					t.Fatalf("%s: %+v", m, res)
				}
			}
		})
	}
}
