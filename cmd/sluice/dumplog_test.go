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
