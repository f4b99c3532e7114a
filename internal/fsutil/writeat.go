package fsutil

import "io"

// WriteChunk is the most WriteAt hands the kernel in one pwrite(2).
//
// The kernel sizes the page-cache folios it allocates for a buffered write
// by the write's length: one 1 MB pwrite(2) fills 1 MB folios, four of
// 256 KiB fill 256 KiB ones. On the VMs this project runs on (free page
// reporting: free blocks of 2 MiB and up go back to the host, which backs
// them again only when touched) the large folios come from those blocks,
// and filling them costs about twice the CPU. Measured alternately on one
// machine (BENCHMARKS.md, "Produce CPU per GB"): bench/floor's pwrite of
// 1 MB batches 1.08-1.72 s/GB whole, 0.68-0.94 in 256 KiB pieces (512 KiB
// as slow as whole, 64 and 128 KiB a little slower than 256); the broker,
// 4 partitions and 1 MB batches, 2.14 -> 1.13 s/GB (acks=1) and 1.55 ->
// 0.99 (acks=all), medians of 3. Four syscalls per MB instead of one cost
// microseconds.
const WriteChunk = 256 << 10

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
