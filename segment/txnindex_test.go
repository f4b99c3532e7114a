package segment

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluice/sluice/engine"
)

// TestTxnIndexFileFormat checks the .txnindex bytes against Kafka's
// AbortedTxn layout (version, producerId, firstOffset, lastOffset,
// lastStableOffset; 34 bytes big-endian) and that the entry lands in the
// file of the segment holding its marker.
func TestTxnIndexFileFormat(t *testing.T) {
	dir, _ := crashedLog(t, 1, true)
	st, l := reopen(t, dir)
	defer st.Close()
	bases := segBases(t, filepath.Join(dir, "topic-3"))
	marker := bases[1] + 1
	a := engine.AbortedTxn{ProducerID: 0x0102, FirstOffset: bases[1] - 1, LastOffset: marker, LastStableOffset: marker + 1}
	if err := l.AppendAbortedTxn(a); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(segmentPath(filepath.Join(dir, "topic-3"), bases[1], txnIndexSuffix))
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 34)
	encodeTxnEntry(want, a)
	if !bytes.Equal(got, want) || len(got) != 34 || got[0] != 0 || got[1] != 0 || got[9] != 0x02 || got[8] != 0x01 {
		t.Fatalf(".txnindex holds\n%s", hex.Dump(got))
	}
	if e := l.SegmentAbortedTxns(bases[0]); len(e) != 0 {
		t.Fatalf("first segment has entries %v", e)
	}
}

// TestTxnIndexRecovery: after a crash, recovery cuts a torn .txnindex
// tail, drops entries whose marker was cut from the .log with a damaged
// tail (as Kafka's recovery truncates the indexes with the log), and
// removes a .txnindex without its .log.
func TestTxnIndexRecovery(t *testing.T) {
	dir, batches := crashedLog(t, 2, false)
	logDir := filepath.Join(dir, "topic-3")
	// Write entries through a reopened log, then crash it the same way.
	st, l := reopen(t, dir)
	end := l.EndOffset()
	bases := segBases(t, logDir)
	lastBase := bases[len(bases)-1]
	prevBase := bases[len(bases)-2]
	keep := engine.AbortedTxn{ProducerID: 1, FirstOffset: prevBase, LastOffset: prevBase, LastStableOffset: prevBase + 1}
	lost := engine.AbortedTxn{ProducerID: 2, FirstOffset: lastBase, LastOffset: end - 1, LastStableOffset: end}
	for _, a := range []engine.AbortedTxn{keep, lost} {
		if err := l.AppendAbortedTxn(a); err != nil {
			t.Fatal(err)
		}
	}
	_ = st // abandoned: a crash
	crashed := copyDir(t, dir)
	logDir = filepath.Join(crashed, "topic-3")
	// Tear the last batch of the last segment and the index tail.
	last := lastBatch(batches[len(batches)-1])
	lp := segmentPath(logDir, lastBase, logSuffix)
	fi, err := os.Stat(lp)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(lp, fi.Size()-int64(last.Size())/2); err != nil {
		t.Fatal(err)
	}
	tp := segmentPath(logDir, lastBase, txnIndexSuffix)
	tornPath := segmentPath(logDir, prevBase, txnIndexSuffix)
	f, err := os.OpenFile(tornPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0, 0, 1, 2, 3}) // a torn entry
	f.Close()
	orphan := segmentPath(logDir, 999999, txnIndexSuffix)
	if err := os.WriteFile(orphan, make([]byte, 34), 0o644); err != nil {
		t.Fatal(err)
	}

	st2, l2 := reopen(t, crashed)
	defer st2.Close()
	if l2.EndOffset() >= end {
		t.Fatalf("recovery kept the torn batch: end %d", l2.EndOffset())
	}
	got, err := l2.AbortedTxns(0, end)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []engine.AbortedTxn{keep}) {
		t.Fatalf("after recovery: %+v, want only %+v", got, keep)
	}
	if fi, err := os.Stat(tornPath); err != nil || fi.Size() != 34 {
		t.Fatalf(".txnindex after recovery: %v, %v bytes; want 34", err, fi)
	}
	if fi, err := os.Stat(tp); err != nil || fi.Size() != 0 {
		t.Fatalf(".txnindex of the torn segment: %v, %v; want empty", err, fi)
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Fatalf("orphan .txnindex still there: %v", err)
	}
}

// FuzzDecodeTxnIndex decodes arbitrary .txnindex bytes. Invariants: it
// never panics; the valid prefix is a whole number of entries and never
// longer than the input; encoding the entries gives the valid prefix back
// byte for byte (re-parsing is stable).
func FuzzDecodeTxnIndex(f *testing.F) {
	one := make([]byte, txnEntrySize)
	encodeTxnEntry(one, engine.AbortedTxn{ProducerID: 7, FirstOffset: 1, LastOffset: 9, LastStableOffset: 10})
	f.Add(one)
	f.Add(append(append([]byte(nil), one...), 0, 0, 1))
	f.Add(append([]byte{0, 1}, one[2:]...))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, valid := DecodeTxnIndex(b)
		if valid > len(b) || valid%txnEntrySize != 0 || valid/txnEntrySize != len(entries) {
			t.Fatalf("valid %d of %d bytes, %d entries", valid, len(b), len(entries))
		}
		again := make([]byte, valid)
		for i, e := range entries {
			encodeTxnEntry(again[i*txnEntrySize:], e)
		}
		if !bytes.Equal(again, b[:valid]) {
			t.Fatalf("re-encoding differs from the valid prefix")
		}
	})
}

// TestTxnIndexSyncAfterClose checks that entries written before the
// open-segment cache closed the file are still fsynced by the next sync:
// sync reopens the file (here it is gone, so the reopen must fail loudly
// rather than report the entries durable), and once a sync succeeded it
// has nothing left to do.
func TestTxnIndexSyncAfterClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "00000000000000000000"+txnIndexSuffix)
	ix, _, err := openTxnIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.append(engine.AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 1}); err != nil {
		t.Fatal(err)
	}
	if err := ix.close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, path+".aside"); err != nil {
		t.Fatal(err)
	}
	if err := ix.sync(); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("sync of a closed, written index without its file: %v, want ErrNotExist", err)
	}
	if err := os.Rename(path+".aside", path); err != nil {
		t.Fatal(err)
	}
	if err := ix.sync(); err != nil {
		t.Fatalf("sync of a closed, written index: %v", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := ix.sync(); err != nil {
		t.Fatalf("sync with nothing written since the last: %v", err)
	}
}
