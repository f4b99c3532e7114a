package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice/sluice/record"
)

// writeSegment writes batches of the given sizes (in records) back to back
// into a .log named for base offset 0, and returns its path.
func writeSegment(t *testing.T, dir string, counts ...int) (string, []byte) {
	t.Helper()
	var buf []byte
	next := int64(0)
	for i, n := range counts {
		recs := make([]record.BuildRecord, n)
		for j := range recs {
			recs[j] = record.BuildRecord{Key: []byte("k"), Value: []byte("v"), Timestamp: int64(1000 + i),
				Headers: []record.Header{{Key: "h", Value: []byte("x")}}}
		}
		buf = record.AppendBatch(buf, record.BatchOptions{BaseOffset: next, ProducerID: -1, BaseSequence: -1}, recs)
		next += int64(n)
	}
	path := filepath.Join(dir, "00000000000000000000.log")
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, buf
}

func TestDumpLog(t *testing.T) {
	dir := t.TempDir()
	logPath, buf := writeSegment(t, dir, 3, 2)
	idx := make([]byte, 16) // one entry, then preallocated zeros
	binary.BigEndian.PutUint32(idx[0:], 3)
	binary.BigEndian.PutUint32(idx[4:], 100)
	idxPath := filepath.Join(dir, "00000000000000000000.index")
	os.WriteFile(idxPath, idx, 0o644)

	var out, errOut strings.Builder
	if code := dumpLog([]string{"--print-data-log", logPath, idxPath}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	got := out.String()
	for _, want := range []string{
		"baseOffset: 0 lastOffset: 2 count: 3",
		"baseOffset: 3 lastOffset: 4 count: 2",
		"isvalid: true",
		"| offset: 4 CreateTime: 1001 keySize: 1 valueSize: 1 sequence: -1 headerKeys: [h] key: k payload: v",
		"offset: 3 position: 100",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}

	// Damage: flip a byte in the second batch and add a torn tail.
	first, _ := record.PeekSize(buf)
	buf[first+record.HeaderSize+2] ^= 0xff
	buf = append(buf, 0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff)
	os.WriteFile(logPath, buf, 0o644)
	out.Reset()
	if code := dumpLog([]string{logPath}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d on a damaged file: %s", code, errOut.String())
	}
	got = out.String()
	for _, want := range []string{"isvalid: false", "crc mismatch", "Found 10 invalid bytes at the end"} {
		if !strings.Contains(got, want) {
			t.Errorf("damaged output lacks %q:\n%s", want, got)
		}
	}
}

func TestDumpLogUsage(t *testing.T) {
	var out, errOut strings.Builder
	if code := dumpLog(nil, &out, &errOut); code != 2 {
		t.Fatalf("no args: exit %d", code)
	}
	if code := dumpLog([]string{filepath.Join(t.TempDir(), "x.txt")}, &out, &errOut); code != 1 {
		t.Fatalf("unknown suffix: exit %d", code)
	}
	if code := run([]string{"nope"}, &out, &errOut); code != 2 {
		t.Fatalf("unknown command: exit %d", code)
	}
}

// TestDumpLogTransactions: control batches show their marker (type and
// coordinator epoch) on the batch line and, with --deep, on the record
// line; --deep follows a segment with its .txnindex entries, and a
// .txnindex dumps on its own, torn tail reported.
func TestDumpLogTransactions(t *testing.T) {
	dir := t.TempDir()
	var buf []byte
	buf = record.AppendBatch(buf, record.BatchOptions{BaseOffset: 0, ProducerID: 7, BaseSequence: 0, Attributes: record.TransactionalBit},
		[]record.BuildRecord{{Value: []byte("a"), Timestamp: 1}, {Value: []byte("b"), Timestamp: 1}})
	buf = record.AppendEndTxnMarker(buf, record.MarkerOptions{BaseOffset: 2, ProducerID: 7, Timestamp: 2}, record.EndTxnMarker{Type: record.ControlAbort, CoordinatorEpoch: 4})
	logPath := filepath.Join(dir, "00000000000000000000.log")
	if err := os.WriteFile(logPath, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	entry := make([]byte, 34)
	binary.BigEndian.PutUint64(entry[2:], 7)  // producer id
	binary.BigEndian.PutUint64(entry[10:], 0) // first offset
	binary.BigEndian.PutUint64(entry[18:], 2) // last offset (the marker)
	binary.BigEndian.PutUint64(entry[26:], 3) // last stable offset
	txnPath := filepath.Join(dir, "00000000000000000000.txnindex")
	if err := os.WriteFile(txnPath, append(entry, 0, 0, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	const line = "version: 0 producerId: 7 firstOffset: 0 lastOffset: 2 lastStableOffset: 3"
	for _, tc := range []struct {
		name      string
		args      []string
		want, not []string
	}{
		{"batches", []string{logPath}, []string{"isTransactional: true isControl: true", "endTxnMarker: ABORT coordinatorEpoch: 4"}, []string{line, "| offset"}},
		{"deep", []string{"--deep", logPath}, []string{"| offset: 2 CreateTime: 2 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: ABORT coordinatorEpoch: 4", "Aborted transactions (00000000000000000000.txnindex)", line}, nil},
		{"txnindex", []string{txnPath}, []string{line, "Found 3 invalid bytes"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut strings.Builder
			if code := dumpLog(tc.args, &out, &errOut); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			for _, w := range tc.not {
				if strings.Contains(out.String(), w) {
					t.Errorf("output has %q:\n%s", w, out.String())
				}
			}
		})
	}
}
