package fsutil

import "io"

// WriteChunk is the most WriteAt hands the kernel in one pwrite(2).
//
// The kernel sizes the page-cache folios it allocates for a buffered write
// by the write's length (one 1 MB pwrite(2) fills 1 MB folios, four of
// 256 KiB fill 256 KiB ones), and on the VMs this project runs on what a
// large folio costs to fill depends on how the host backs the guest's
// free memory (free page reporting). On 2026-12-03 at 14:45 a 1 MB pwrite
// cost about twice four 256 KiB ones (bench/floor 1.08-1.72 against
// 0.68-0.94 s/GB; the broker, 4 partitions of 1 MB batches, 2.14 -> 1.13
// s/GB), and this was 256 KiB. At 20:15 the same day, with blocks reserved
// ahead of the writes (Reserver) and both with free page reporting on and
// paused, it was the other way round: 512 MiB in 1 MiB pieces 0.17 s/GB
// of the writer's CPU against 0.27 in 256 KiB ones (0.135 and 0.18 into
// reserved blocks), and the broker, alternating builds, medians of 5-6,
// 0.765 -> 0.667 (acks=1) and 0.814 -> 0.667 (acks=all) with reporting
// on, 0.948 -> 0.838 and 1.009 -> 0.838 with it paused, every round of
// both in favour of 1 MiB. A quarter of the system calls also means a
// quarter of the Go runtime's P hand-offs around them on a one-core
// broker. BENCHMARKS.md ("Block reservation") keeps both measurements.
const WriteChunk = 1 << 20

// WriteAt writes p at off through w in pieces of at most WriteChunk bytes.
// It returns the bytes written before the first error, as io.WriterAt
// does.
func WriteAt(w io.WriterAt, p []byte, off int64) (int, error) {
	var n int
	for n < len(p) {
		chunk := p[n:min(len(p), n+WriteChunk)]
		m, err := w.WriteAt(chunk, off+int64(n))
		n += m
		if err == nil && m < len(chunk) {
			err = io.ErrShortWrite // io.WriterAt forbids it; *os.File never does
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
