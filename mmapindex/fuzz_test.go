package mmapindex

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// fuzzBase is the segment base offset of the fuzzed indexes.
const fuzzBase = 1000

// index is what the fuzz target needs of both index kinds.
type index interface {
	Entries() int
	Full() bool
	Close() error
}

// openFuzz opens path as an offset index (timeIndex false) or a time
// index.
func openFuzz(path string, timeIndex bool, maxBytes int) (index, error) {
	if timeIndex {
		return OpenTime(path, fuzzBase, maxBytes)
	}
	return OpenOffset(path, fuzzBase, maxBytes)
}

// FuzzOpen writes arbitrary bytes as an .index or .timeindex file (a file
// left by a crash, or garbage) and opens it, with maxBytes room. The file
// is written, so it has no hole (TestStaleEntriesAfterHole covers holes).
// Invariants:
//
//   - opening never panics, nor do Check, Lookup, LookupPosition, Last;
//   - the entry count is exactly the whole entries up to the last one
//     that is not all zeros: never more than the bytes hold, and nothing
//     past them (a partial entry at the end is not one);
//   - the entries read back as the bytes encode them, and everything
//     mapped after them is zero;
//   - Check is ErrCorrupt exactly when the entries are not ascending as
//     the format requires; when it passes, Lookup is the floor of the
//     entries (checked against a linear scan);
//   - reopening is stable: Close trims the file to the entries, and the
//     next open finds the same ones;
//   - an index that passed Check takes an Append above its last entry
//     when it has room, and the reopen finds it too.
func FuzzOpen(f *testing.F) {
	be := binary.BigEndian
	off := func(pairs ...int32) []byte {
		var b []byte
		for _, v := range pairs {
			b = be.AppendUint32(b, uint32(v))
		}
		return b
	}
	tim := func(ts int64, rel int32) []byte {
		return be.AppendUint32(be.AppendUint64(nil, uint64(ts)), uint32(rel))
	}
	f.Add([]byte{}, false, uint16(0))
	f.Add(make([]byte, 64), false, uint16(4096))
	f.Add(off(1, 100, 2, 200, 5, 900), false, uint16(0))
	f.Add(append(off(1, 100, 2, 200), make([]byte, 100)...), false, uint16(64))
	f.Add(off(1, 100, 1, 200), false, uint16(0))       // offsets not ascending
	f.Add(off(1, 100, 0, 0, 3, 300), false, uint16(0)) // a zero entry inside
	f.Add(off(-1, 100), false, uint16(0))
	f.Add(append(off(1, 100), 7, 7, 7), false, uint16(0)) // partial entry
	f.Add(append(tim(10, 0), tim(20, 5)...), true, uint16(0))
	f.Add(append(tim(20, 0), tim(10, 5)...), true, uint16(120))
	f.Add(append(tim(0, 0), tim(10, 5)...), true, uint16(0))
	f.Add(append(tim(-5, 0), 1), true, uint16(0))
	// One file per worker process, rewritten by each run: a fresh
	// t.TempDir per run costs more than the run.
	path := filepath.Join(f.TempDir(), "x")
	f.Fuzz(func(t *testing.T, data []byte, timeIndex bool, maxBytes uint16) {
		es := OffsetEntrySize
		if timeIndex {
			es = TimeEntrySize
		}
		want := len(data) / es
		for want > 0 && allZero(data[(want-1)*es:want*es]) {
			want--
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		x, err := openFuzz(path, timeIndex, int(maxBytes))
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		if n := x.Entries(); n != want {
			t.Fatalf("%d entries in %d bytes, want %d", n, len(data), want)
		}
		fl := fileOf(x)
		for i := want * es; i < len(fl.mm); i++ {
			if fl.mm[i] != 0 {
				t.Fatalf("byte %d after the %d entries is %#x", i, want, fl.mm[i])
			}
		}
		if !bytesEqual(fl.mm[:want*es], data[:want*es]) {
			t.Fatal("entries do not read back as written")
		}
		var added int
		if timeIndex {
			added = checkTime(t, x.(*TimeIndex), want)
		} else {
			added = checkOffset(t, x.(*OffsetIndex), want)
		}
		want += added
		appended := append([]byte(nil), fl.mm[:want*es]...)

		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(path); err != nil || st.Size() != int64(want*es) {
			t.Fatalf("closed file: %v, size %d, want %d", err, st.Size(), want*es)
		}
		y, err := openFuzz(path, timeIndex, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer y.Close()
		if y.Entries() != want || !bytesEqual(fileOf(y).mm[:want*es], appended) {
			t.Fatalf("reopen found %d entries, want the same %d", y.Entries(), want)
		}
	})
}

// checkOffset checks Check, Lookup and Append of an offset index holding
// the n fuzzed entries, and returns how many entries it appended.
func checkOffset(t *testing.T, x *OffsetIndex, n int) int {
	valid := true
	prevRel, prevPos := int64(-1), int64(0)
	for i := range n {
		o, p := x.Entry(i)
		if rel := o - x.base; rel <= prevRel || p <= prevPos || p >= 1<<30 {
			valid = false
		} else {
			prevRel, prevPos = rel, p
		}
	}
	err := x.Check(1<<30, -1)
	if (err == nil) != valid || (err != nil && !errors.Is(err, ErrCorrupt)) {
		t.Fatalf("Check = %v, entries valid: %v", err, valid)
	}
	for _, target := range []int64{x.base - 1, x.base, x.base + 1, x.base + 100, x.base + 1<<31, -1 << 62} {
		o, p, ok := x.Lookup(target)
		_, _, _ = x.LookupPosition(target)
		if !valid {
			continue
		}
		wi := -1
		for i := range n {
			if eo, _ := x.Entry(i); eo <= target {
				wi = i
			}
		}
		if ok != (wi >= 0) {
			t.Fatalf("Lookup(%d) ok=%v, want entry %d", target, ok, wi)
		}
		if ok {
			if eo, ep := x.Entry(wi); o != eo || p != ep {
				t.Fatalf("Lookup(%d) = (%d, %d), want (%d, %d)", target, o, p, eo, ep)
			}
		}
	}
	if valid && !x.Full() && prevRel < 1<<31-2 && prevPos < 1<<31-2 {
		if err := x.Append(x.base+prevRel+1, prevPos+1); err != nil {
			t.Fatalf("Append after (%d, %d): %v", prevRel, prevPos, err)
		}
		if o, _, ok := x.Lookup(x.base + prevRel + 1); !ok || o != x.base+prevRel+1 {
			t.Fatalf("appended entry not found: %d %v", o, ok)
		}
		return 1
	}
	return 0
}

// checkTime checks Check, Lookup, Last and MaybeAppend of a time index
// holding the n fuzzed entries, and returns how many entries it appended.
func checkTime(t *testing.T, x *TimeIndex, n int) int {
	valid := true
	var prevTs int64
	prevRel := int64(0)
	for i := range n {
		ts, o := x.Entry(i)
		rel := o - x.base
		if (i > 0 && ts <= prevTs) || rel < prevRel {
			valid = false
		}
		prevTs, prevRel = ts, max(prevRel, rel)
	}
	err := x.Check(-1)
	if (err == nil) != valid || (err != nil && !errors.Is(err, ErrCorrupt)) {
		t.Fatalf("Check = %v, entries valid: %v", err, valid)
	}
	if _, _, ok := x.Last(); ok != (n > 0) {
		t.Fatalf("Last ok=%v with %d entries", ok, n)
	}
	for _, target := range []int64{-1 << 63, -1, 0, 1, 1 << 40, 1<<63 - 1} {
		ts, o, ok := x.Lookup(target)
		if !valid {
			continue
		}
		wi := -1
		for i := range n {
			if ets, _ := x.Entry(i); ets <= target {
				wi = i
			}
		}
		if ok != (wi >= 0) {
			t.Fatalf("Lookup(%d) ok=%v, want entry %d", target, ok, wi)
		}
		if ok {
			if ets, eo := x.Entry(wi); ts != ets || o != eo {
				t.Fatalf("Lookup(%d) = (%d, %d), want (%d, %d)", target, ts, o, ets, eo)
			}
		}
	}
	if valid && !x.Full() && (n == 0 || prevTs < 1<<63-1) {
		ts := prevTs + 1
		if n == 0 {
			ts = 1
		}
		if ok, err := x.MaybeAppend(ts, x.base+prevRel); !ok || err != nil {
			t.Fatalf("MaybeAppend(%d) after %d: %v %v", ts, prevTs, ok, err)
		}
		return 1
	}
	return 0
}

func fileOf(x index) *file {
	if o, ok := x.(*OffsetIndex); ok {
		return o.file
	}
	return x.(*TimeIndex).file
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }
