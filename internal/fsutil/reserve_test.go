package fsutil

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
	"testing"
)

// The reservation's policy: nothing below ReserveFrom, then as far ahead
// as the file holds, at most ReserveMax, never past limit unless the
// append itself goes past it, and no call while the append lies in what
// is already reserved.
func TestReservePolicy(t *testing.T) {
	type call struct{ off, n int64 }
	var calls []call
	r := &Reserver{fallocate: func(_ *os.File, off, n int64) error {
		calls = append(calls, call{off, n})
		return nil
	}}
	const MiB = 1 << 20
	for _, tc := range []struct {
		name                    string
		pos, n, reserved, limit int64
		want                    int64
		call                    *call
	}{
		{"small file", 0, 4096, 0, 1 << 30, 0, nil},
		{"just below", ReserveFrom - 1, 1, 0, 1 << 30, 0, nil},
		{"from 1 MiB", ReserveFrom, 4096, 0, 1 << 30, 2 * MiB, &call{MiB, MiB}},
		{"as much as it holds", 3 * MiB, MiB, 0, 1 << 30, 6 * MiB, &call{3 * MiB, 3 * MiB}},
		{"at most ReserveMax", 100 * MiB, MiB, 0, 1 << 30, 104 * MiB, &call{100 * MiB, 4 * MiB}},
		{"inside the reservation", 100 * MiB, MiB, 104 * MiB, 1 << 30, 104 * MiB, nil},
		{"from the reserved end", 102 * MiB, 3 * MiB, 104 * MiB, 1 << 30, 106 * MiB, &call{104 * MiB, 2 * MiB}},
		{"capped at limit", 62 * MiB, MiB, 0, 64 * MiB, 64 * MiB, &call{62 * MiB, 2 * MiB}},
		{"an append past limit", 63 * MiB, 2 * MiB, 0, 64 * MiB, 65 * MiB, &call{63 * MiB, 2 * MiB}},
		{"an append larger than ahead", 2 * MiB, 8 * MiB, 0, 1 << 30, 10 * MiB, &call{2 * MiB, 8 * MiB}},
	} {
		calls = calls[:0]
		got := r.Reserve(nil, tc.pos, tc.n, tc.reserved, tc.limit)
		if got != tc.want {
			t.Errorf("%s: Reserve(pos %d, n %d, reserved %d, limit %d) = %d, want %d", tc.name, tc.pos, tc.n, tc.reserved, tc.limit, got, tc.want)
		}
		switch {
		case tc.call == nil && len(calls) != 0:
			t.Errorf("%s: fallocate %v, want none", tc.name, calls)
		case tc.call != nil && (len(calls) != 1 || calls[0] != *tc.call):
			t.Errorf("%s: fallocate %v, want %v", tc.name, calls, *tc.call)
		}
	}
}

// A file system without fallocate is asked once; any other refusal (no
// space) is asked again for the next stretch, and neither stops a write.
func TestReserveRefused(t *testing.T) {
	n := 0
	r := &Reserver{fallocate: func(*os.File, int64, int64) error { n++; return syscall.ENOSPC }}
	end := r.Reserve(nil, 2<<20, 4096, 0, 1<<30)
	if end != 4<<20 || n != 1 {
		t.Fatalf("ENOSPC: end %d after %d calls", end, n)
	}
	r.Reserve(nil, end, 4096, end, 1<<30)
	if n != 2 {
		t.Fatalf("ENOSPC was not asked again past the end it aimed at: %d calls", n)
	}
	n = 0
	r = &Reserver{fallocate: func(*os.File, int64, int64) error { n++; return errNoFallocate }}
	for pos := int64(2 << 20); pos < 100<<20; pos += 8 << 20 {
		r.Reserve(nil, pos, 8<<20, 0, 1<<30)
	}
	if n != 1 {
		t.Fatalf("unsupported fallocate asked %d times, want once", n)
	}
}

// On a real file the reservation allocates blocks past the end without
// changing the size, and ReleaseReserved hands them back.
func TestReserveRealFile(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("fallocate(2) is Linux's")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "seg.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := make([]byte, 2<<20)
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	var r Reserver
	end := r.Reserve(f, int64(len(data)), 4096, 0, 1<<30)
	if r.off.Load() {
		t.Skip("this file system has no fallocate")
	}
	if end != 4<<20 {
		t.Fatalf("reserved end %d, want %d", end, 4<<20)
	}
	size, blocks := stat(t, f)
	if size != int64(len(data)) {
		t.Fatalf("size %d after the reservation, want %d", size, len(data))
	}
	if blocks < end {
		t.Fatalf("%d bytes of blocks after reserving up to %d", blocks, end)
	}
	if err := ReleaseReserved(f, size); err != nil {
		t.Fatal(err)
	}
	size, blocks = stat(t, f)
	if size != int64(len(data)) || blocks >= end {
		t.Fatalf("after release: size %d, %d bytes of blocks (reserved end was %d)", size, blocks, end)
	}
}

func stat(t *testing.T, f *os.File) (size, blocks int64) {
	size, blocks, ok, err := Allocated(f.Name())
	if err != nil || !ok {
		t.Fatalf("blocks of %s: %v (counted: %v)", f.Name(), err, ok)
	}
	return size, blocks
}

// BenchmarkWriteReserved writes 64 MiB files in WriteChunk pwrites (WriteAt),
// then fdatasyncs them, with and without blocks reserved ahead
// (mode=reserve: Reserver.Reserve before each write, as the segment
// backend does). Besides ns/op it reports the writing thread's CPU per GB
// (thread-s/GB, RUSAGE_THREAD) and the whole machine's (machine-s/GB,
// /proc/stat: every CPU's user, system and interrupt time, so the
// writeback the fdatasync waits for is counted wherever it runs). Run it
// on a quiet machine: the machine figure counts everything.
func BenchmarkWriteReserved(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("fallocate(2) and /proc/stat are Linux's")
	}
	const fileBytes = 64 << 20
	buf := make([]byte, WriteChunk)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	for _, mode := range []string{"plain", "reserve"} {
		b.Run("mode="+mode, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			dir := b.TempDir()
			var r Reserver
			var thread, machine float64
			b.SetBytes(fileBytes)
			for i := 0; b.Loop(); i++ {
				f, err := os.Create(filepath.Join(dir, "f"))
				if err != nil {
					b.Fatal(err)
				}
				t0, m0 := threadCPU(b), machineCPU(b)
				var reserved int64
				for off := int64(0); off < fileBytes; off += int64(len(buf)) {
					if mode == "reserve" {
						reserved = r.Reserve(f, off, int64(len(buf)), reserved, 1<<30)
					}
					if _, err := WriteAt(f, buf, off); err != nil {
						b.Fatal(err)
					}
				}
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
				thread += threadCPU(b) - t0
				machine += machineCPU(b) - m0
				f.Close()
				os.Remove(f.Name())
			}
			gb := float64(b.N) * fileBytes / 1e9
			b.ReportMetric(thread/gb, "thread-s/GB")
			b.ReportMetric(machine/gb, "machine-s/GB")
		})
	}
}

// threadCPU is the calling thread's CPU seconds (user and system).
func threadCPU(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		b.Fatal(err)
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// machineCPU is every CPU's busy seconds from /proc/stat: user, nice,
// system, irq and softirq.
func machineCPU(b *testing.B) float64 {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	var user, nice, system, idle, iowait, irq, softirq float64
	if _, err := fmt.Sscanf(string(data), "cpu %f %f %f %f %f %f %f", &user, &nice, &system, &idle, &iowait, &irq, &softirq); err != nil {
		b.Fatal(err)
	}
	return (user + nice + system + irq + softirq) / 100 // USER_HZ
}
