package server

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// vmFlags returns the VmFlags of the mapping holding addr, from
// /proc/self/smaps.
func vmFlags(t *testing.T, addr uintptr) []string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 { // a mapping's first line
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.Fields(strings.TrimPrefix(line, "VmFlags:"))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("no mapping holds %#x", addr)
	return nil
}

// TestFrameMappingHugePages: a frame read into a mapping is advised for
// transparent huge pages once its charge reaches hugeFrameBytes, not
// before (a client that sent a few KiB of a large frame does not get a
// 2 MiB page), and the bytes read survive the advice and settle.
func TestFrameMappingHugePages(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("no transparent huge pages in this kernel")
	}
	if off, err := unix.PrctlRetInt(unix.PR_GET_THP_DISABLE, 0, 0, 0, 0); err == nil && off != 0 {
		t.Skip("transparent huge pages disabled for this process (PR_SET_THP_DISABLE)")
	}
	p := newMemPool(-1, 0)
	const n = 8 << 20
	var f frameBuf
	have := 0
	advisedAt := int64(-1)
	for have < n {
		buf, err := f.grow(p, n, have, 0, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if f.m == nil {
			t.Fatalf("a %d-byte frame was not mapped", n)
		}
		hg := slices.Contains(vmFlags(t, uintptr(unsafe.Pointer(&f.m[0]))), "hg")
		if hg != (f.charged >= hugeFrameBytes) {
			t.Fatalf("charged %d: mapping advised %v, want %v", f.charged, hg, f.charged >= hugeFrameBytes)
		}
		if hg && advisedAt < 0 {
			advisedAt = f.charged
		}
		for i := have; i < len(buf); i++ {
			buf[i] = byte(i * 7)
		}
		have = len(buf)
	}
	if advisedAt != hugeFrameBytes {
		t.Fatalf("advised at a charge of %d, want %d", advisedAt, hugeFrameBytes)
	}
	body := f.settle(n)
	if f.m != nil {
		t.Fatal("settle left the mapping")
	}
	for i := range n {
		if body[i] != byte(i*7) {
			t.Fatalf("byte %d is %d after settle", i, body[i])
		}
	}
	f.free(p, false)
	if p.inUse() != 0 {
		t.Fatalf("%d in use after free", p.inUse())
	}
}
