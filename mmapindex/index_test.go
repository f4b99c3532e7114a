package mmapindex

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// fillOffset appends n entries: offset base+10*(i+1), position 100*(i+1).
func fillOffset(t testing.TB, x *OffsetIndex, n int) {
	for i := 1; i <= n; i++ {
		if err := x.Append(x.base+int64(10*i), int64(100*i)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOffsetLookup(t *testing.T) {
	// Sizes on both sides of the warm section (8192/8 = 1024 entries).
	for _, n := range []int{0, 1, 2, 1023, 1024, 1025, 5000} {
		t.Run(fmt.Sprintf("entries=%d", n), func(t *testing.T) {
			x, err := OpenOffset(filepath.Join(t.TempDir(), "0.index"), 1000, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			fillOffset(t, x, n)
			for target := int64(990); target <= 1000+int64(10*n)+20; target++ {
				// Reference: entry i has offset 1000+10*(i+1), so the
				// greatest one <= target is i = (target-1000)/10 - 1.
				want := -1
				if target >= 1010 {
					want = min(int((target-1000)/10)-1, n-1)
				}
				o, p, ok := x.Lookup(target)
				if ok != (want >= 0) {
					t.Fatalf("Lookup(%d) ok=%v, want entry %d", target, ok, want)
				}
				if ok {
					if wo, wp := x.Entry(want); o != wo || p != wp {
						t.Fatalf("Lookup(%d) = (%d,%d), want (%d,%d)", target, o, p, wo, wp)
					}
					if _, pp, _ := x.LookupPosition(p); pp != p {
						t.Fatalf("LookupPosition(%d) = %d", p, pp)
					}
					if _, pp, _ := x.LookupPosition(p + 99); pp != p {
						t.Fatalf("LookupPosition(%d) = %d", p+99, pp)
					}
				}
			}
		})
	}
}

func TestReopenFindsEntriesNotPrealloc(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.index")
	x, err := OpenOffset(path, 0, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	fillOffset(t, x, 37)
	if st, _ := os.Stat(path); st.Size() != 1<<16 {
		t.Fatalf("preallocated size %d", st.Size())
	}
	// Simulate a crash: no trim, drop the mapping and file.
	x.unmap()
	x.open = false
	x, err = OpenOffset(path, 0, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	if x.Entries() != 37 {
		t.Fatalf("entries after unclean reopen = %d, want 37", x.Entries())
	}
	if err := x.Check(1<<20, -1); err != nil {
		t.Fatal(err)
	}
	x.TruncateTo(205) // keeps offsets 10..200
	if x.Entries() != 20 {
		t.Fatalf("entries after TruncateTo = %d", x.Entries())
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Size() != 20*OffsetEntrySize {
		t.Fatalf("trimmed size %d", st.Size())
	}
	x, err = OpenOffset(path, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if x.Entries() != 20 || !x.Full() {
		t.Fatalf("entries %d full %v", x.Entries(), x.Full())
	}
	if err := x.Append(1000, 10000); !errors.Is(err, ErrFull) {
		t.Fatalf("append to trimmed index: %v", err)
	}
}

func TestOffsetCheck(t *testing.T) {
	cases := []struct {
		name    string
		damage  func(mm []byte)
		logSize int64
		ok      bool
	}{
		{"intact", func([]byte) {}, 1 << 20, true},
		{"position past log", func([]byte) {}, 500, false},
		{"swapped entries", func(mm []byte) {
			var tmp [8]byte
			copy(tmp[:], mm[8:16])
			copy(mm[8:16], mm[16:24])
			copy(mm[16:24], tmp[:])
		}, 1 << 20, false},
		{"zeroed middle", func(mm []byte) { clear(mm[16:24]) }, 1 << 20, false},
		{"random bytes", func(mm []byte) { rand.New(rand.NewSource(1)).Read(mm[:80]) }, 1 << 20, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x, err := OpenOffset(filepath.Join(t.TempDir(), "0.index"), 0, 4096)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			fillOffset(t, x, 10)
			tc.damage(x.mm)
			err = x.Check(tc.logSize, -1)
			if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrCorrupt)) {
				t.Fatalf("Check = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestTimeIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.timeindex")
	x, err := OpenTime(path, 100, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2000; i++ {
		if ok, err := x.MaybeAppend(int64(1000*i), int64(100+i)); err != nil || !ok {
			t.Fatal(ok, err)
		}
		// A timestamp that does not grow is not indexed.
		if ok, _ := x.MaybeAppend(int64(1000*i), int64(100+i)); ok {
			t.Fatal("appended an equal timestamp")
		}
	}
	for _, tc := range []struct{ ts, wantTs, wantOff int64 }{
		{999, -1, -1}, {1000, 1000, 101}, {1999, 1000, 101}, {2_000_000, 2_000_000, 2100}, {5_000_000, 2_000_000, 2100}, {1_500_500, 1_500_000, 1600},
	} {
		ts, off, ok := x.Lookup(tc.ts)
		if tc.wantTs < 0 {
			if ok {
				t.Fatalf("Lookup(%d) = %d,%d", tc.ts, ts, off)
			}
			continue
		}
		if !ok || ts != tc.wantTs || off != tc.wantOff {
			t.Fatalf("Lookup(%d) = %d,%d,%v want %d,%d", tc.ts, ts, off, ok, tc.wantTs, tc.wantOff)
		}
	}
	if err := x.Check(3000); err != nil {
		t.Fatal(err)
	}
	if err := x.Check(1000); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Check with small span: %v", err)
	}
	x.TruncateTo(1101)
	if ts, off, _ := x.Last(); ts != 1_000_000 || off != 1100 {
		t.Fatalf("Last after TruncateTo = %d,%d", ts, off)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	x, err = OpenTime(path, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if x.Entries() != 1000 {
		t.Fatalf("entries after reopen %d", x.Entries())
	}
}

// TestStaleEntriesAfterHole: a crash can leave old entries after a page
// that never reached the disk. The scan stops at the hole, and the stale
// entries past it are wiped so they cannot come back later.
func TestStaleEntriesAfterHole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.index")
	x, err := OpenOffset(path, 0, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	fillOffset(t, x, 2000) // 16000 bytes: pages 0-3
	x.unmap()
	x.open = false
	// Punch page 1 out, as if it had never been written back.
	f, _ := os.OpenFile(path, os.O_RDWR, 0)
	if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 4096, 4096); err != nil {
		t.Skip("no hole punching:", err)
	}
	f.Close()
	x, err = OpenOffset(path, 0, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	if x.Entries() != 512 {
		t.Fatalf("entries %d, want the 512 before the hole", x.Entries())
	}
	if err := x.Check(1<<30, -1); err != nil {
		t.Fatal(err)
	}
	for i := 512 * 8; i < len(x.mm); i++ {
		if x.mm[i] != 0 {
			t.Fatalf("byte %d after the entries is %d", i, x.mm[i])
		}
	}
	x.Close()
}

// TestAppendFaultIsAnError: a store into the mapping that the kernel
// answers with SIGBUS is an error of Append, not the end of the process. On
// a full file system that is a page of the sparse file that can get no
// block; here, the same signal: the page past the end of a file cut to its
// first page behind the index's back, the entries before it still readable.
func TestAppendFaultIsAnError(t *testing.T) {
	page := os.Getpagesize()
	path := filepath.Join(t.TempDir(), "0.index")
	x, err := OpenOffset(path, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	fillOffset(t, x, page/OffsetEntrySize) // the first page, exactly
	if err := os.Truncate(path, int64(page)); err != nil {
		t.Fatal(err)
	}
	err = x.Append(int64(10*(page/OffsetEntrySize+1)), int64(100*(page/OffsetEntrySize+1)))
	if !errors.Is(err, ErrFault) {
		t.Fatalf("Append into the page past the end: %v, want ErrFault", err)
	}
	if n := x.Entries(); n != page/OffsetEntrySize {
		t.Fatalf("%d entries after the failed Append, want %d (not published)", n, page/OffsetEntrySize)
	}

	tpath := filepath.Join(t.TempDir(), "0.timeindex")
	tx, err := OpenTime(tpath, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	k := page / TimeEntrySize // entry k starts in the first page and ends in the second
	for i := range k {
		if _, err := tx.MaybeAppend(int64(1000+i), int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Truncate(tpath, int64(page)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.MaybeAppend(int64(1000+k), int64(k)); !errors.Is(err, ErrFault) {
		t.Fatalf("MaybeAppend across the end: %v, want ErrFault", err)
	}
	if n := tx.Entries(); n != k {
		t.Fatalf("%d time entries after the failed append, want %d", n, k)
	}
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(ents)
}

// An open index holds a mapping, not a descriptor: a segment in the
// open-file cache costs its .log's descriptor only.
func TestOpenIndexHoldsNoDescriptor(t *testing.T) {
	dir := t.TempDir()
	before := openFDs(t)
	var xs []*OffsetIndex
	for i := range 50 {
		x, err := OpenOffset(filepath.Join(dir, fmt.Sprintf("%d.index", i)), 0, 1<<16)
		if err != nil {
			t.Fatal(err)
		}
		fillOffset(t, x, 10)
		xs = append(xs, x)
	}
	if got := openFDs(t); got > before+2 { // +2: slack for the runtime's own
		t.Fatalf("50 open indexes hold %d descriptors", got-before)
	}
	for _, x := range xs {
		if err := x.Resize(1 << 17); err != nil {
			t.Fatal(err)
		}
		if err := x.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := x.Trim(); err != nil {
			t.Fatal(err)
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if got := openFDs(t); got > before+2 {
		t.Fatalf("after resize, flush, trim and close: %d descriptors more", got-before)
	}
	if st, err := os.Stat(filepath.Join(dir, "0.index")); err != nil || st.Size() != 10*OffsetEntrySize {
		t.Fatalf("closed index: %v, %v; want %d bytes", st, err, 10*OffsetEntrySize)
	}
}

// The operations that open the file again by its path act only on the
// file that was mapped: one renamed away, or replaced by another under the
// same name, is not trimmed or resized behind its new owner's back.
func TestPathOpsSkipAReplacedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.index")
	x, err := OpenOffset(path, 0, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	fillOffset(t, x, 5)
	moved := filepath.Join(dir, "0.index.deleted")
	if err := os.Rename(path, moved); err != nil {
		t.Fatal(err)
	}
	other := make([]byte, 4096)
	other[0] = 0xAB
	if err := os.WriteFile(path, other, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := x.Resize(1 << 17); !errors.Is(err, errReplaced) {
		t.Fatalf("Resize of a replaced file: %v, want errReplaced", err)
	}
	if err := x.Close(); err != nil {
		t.Fatalf("Close of a replaced file: %v", err)
	}
	if b, _ := os.ReadFile(path); len(b) != 4096 || b[0] != 0xAB {
		t.Fatalf("the file now at the path was changed: %d bytes", len(b))
	}
	// The renamed file kept its preallocated length and its entries: a
	// reopen scans them as after a crash.
	y, err := OpenOffset(moved, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	if y.Entries() != 5 {
		t.Fatalf("renamed file holds %d entries, want 5", y.Entries())
	}
}

// Release unmaps without trimming, as an evicted active segment's indexes
// are: the file stays preallocated and a reopen at the same size finds the
// entries and room for more.
func TestReleaseKeepsPreallocation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.timeindex")
	x, err := OpenTime(path, 0, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 7; i++ {
		if _, err := x.MaybeAppend(int64(1000*i), int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Release(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Size() != 1<<16-(1<<16)%TimeEntrySize {
		t.Fatalf("released file is %d bytes, want it preallocated", st.Size())
	}
	y, err := OpenTime(path, 0, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	if y.Entries() != 7 || y.Full() {
		t.Fatalf("reopened: %d entries, full %v", y.Entries(), y.Full())
	}
	if _, err := y.MaybeAppend(8000, 8); err != nil {
		t.Fatal(err)
	}
	// The reopen owns the file now: the released index forgets it, and
	// the reopen's Release and Close trim it to its 8 entries.
	x.Forget()
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Size() != 1<<16-(1<<16)%TimeEntrySize {
		t.Fatalf("a forgotten index trimmed the file to %d bytes", st.Size())
	}
	if err := y.Release(); err != nil {
		t.Fatal(err)
	}
	if err := y.Close(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Size() != 8*TimeEntrySize {
		t.Fatalf("closing a released index left %d bytes, want %d", st.Size(), 8*TimeEntrySize)
	}
}
