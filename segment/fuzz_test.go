package segment

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

// FuzzRecoverTail appends arbitrary bytes after the valid batches of a
// crashed log's last segment and reopens it. Invariants:
//
//   - recovery never panics and never fails: a damaged tail is cut, not
//     reported;
//   - the valid prefix survives: every batch appended before the crash
//     reads back byte for byte, and EndOffset is at least the prefix's end;
//   - whatever recovery kept past the prefix is whole, valid batches whose
//     offsets continue the prefix's (a tail that happens to hold a valid
//     next batch may stay);
//   - the result is stable: reopening after a clean close, and again after
//     a crash, gives the same end offset and the same bytes;
//   - the next append gets offset EndOffset.
//
// Each run reopens a store three times (about 20 ms with fsync off), so
// pass a short -fuzzminimizetime: with the default 60 s, a short
// -fuzztime is spent minimizing the first interesting input:
//
//	go test -run '^$' -fuzz FuzzRecoverTail -fuzztime 10s -fuzzminimizetime 2s ./segment/
func FuzzRecoverTail(f *testing.F) {
	tmpl, batches := crashedLog(f, 21, false) // turns fsync off

	prefix := bytes.Join(batches, nil)
	prefixEnd := record.Batch(batches[len(batches)-1]).NextOffset()
	next := mkBatch(rand.New(rand.NewSource(1)), 2, 77, 30)
	record.Batch(next).SetBaseOffset(prefixEnd)
	f.Add([]byte{})
	f.Add(make([]byte, 100))
	f.Add(next)
	f.Add(next[:len(next)-1])
	f.Add(append(append([]byte(nil), next...), 1, 2, 3))
	f.Add(batches[0])
	f.Fuzz(func(t *testing.T, tail []byte) {
		dir := copyDir(t, tmpl)
		fh, err := os.OpenFile(lastLog(t, dir), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		fh.Write(tail)
		fh.Close()

		st, l := reopen(t, dir)
		if l.EndOffset() < prefixEnd {
			t.Fatalf("EndOffset %d below the valid prefix's %d", l.EndOffset(), prefixEnd)
		}
		all := readAll(t, l)
		if !bytes.HasPrefix(all, prefix) {
			t.Fatal("the valid prefix did not survive")
		}
		if extra := all[len(prefix):]; len(extra) > 0 {
			if _, _, err := record.ValidateAll(extra); err != nil {
				t.Fatalf("recovery kept an invalid tail: %v", err)
			}
			if record.Batch(extra).BaseOffset() != prefixEnd {
				t.Fatalf("kept tail starts at offset %d, want %d", record.Batch(extra).BaseOffset(), prefixEnd)
			}
		}
		end := l.EndOffset()
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		// A clean reopen trusts what recovery left.
		st, l = reopen(t, dir)
		if l.EndOffset() != end || !bytes.Equal(readAll(t, l), all) {
			t.Fatalf("clean reopen changed the log: end %d, want %d", l.EndOffset(), end)
		}
		st.Close()
		// The same files without the marker are recovered again, to the
		// same result.
		os.Remove(filepath.Join(dir, cleanShutdownFile))
		st, l = reopen(t, dir)
		defer st.Close()
		if l.EndOffset() != end || !bytes.Equal(readAll(t, l), all) {
			t.Fatalf("second recovery changed the log: end %d, want %d", l.EndOffset(), end)
		}
		info, err := l.Append(mkBatch(rand.New(rand.NewSource(2)), 1, 5, 5), engine.AppendOptions{AssignOffsets: true})
		if err != nil || info.FirstOffset != end {
			t.Fatalf("next append: %v, offset %d, want %d", err, info.FirstOffset, end)
		}
	})
}

// readAll reads the whole log sequentially.
func readAll(t testing.TB, l engine.Log) []byte {
	t.Helper()
	var out []byte
	for off := l.StartOffset(); off < l.EndOffset(); {
		b := sliceBytes(t, l, off, 1<<20, -1)
		if len(b) == 0 {
			t.Fatalf("empty read at %d below end %d", off, l.EndOffset())
		}
		out = append(out, b...)
		off = lastBatch(b).NextOffset()
	}
	return out
}
