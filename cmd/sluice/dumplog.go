package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/segment"
)

// dumpLog implements `sluice dump-log`, after kafka-dump-log.sh: it prints
// the batches (and with --deep the records) of .log segment files, the
// marker of each control batch (transaction COMMIT/ABORT and coordinator
// epoch), the entries of .index, .timeindex and .txnindex files (with
// --deep, a segment's .txnindex follows its batches), and says where and
// why a damaged file stops making sense. It reads the files only; it never
// repairs.
func dumpLog(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dump-log", flag.ContinueOnError)
	fs.SetOutput(stderr)
	deep := fs.Bool("deep", false, "print every record of every batch (--deep-iteration)")
	data := fs.Bool("print-data-log", false, "print record keys and values (implies --deep)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: sluice dump-log [--deep] [--print-data-log] FILE.log|FILE.index|FILE.timeindex|FILE.txnindex ...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	status := 0
	for _, path := range fs.Args() {
		fmt.Fprintf(w, "Dumping %s\n", path)
		var err error
		switch filepath.Ext(path) {
		case ".log":
			err = dumpSegment(w, path, *deep || *data, *data)
			if err == nil && (*deep || *data) {
				txn := strings.TrimSuffix(path, ".log") + ".txnindex"
				if _, serr := os.Stat(txn); serr == nil {
					fmt.Fprintf(w, "Aborted transactions (%s)\n", filepath.Base(txn))
					err = dumpTxnIndex(w, txn)
				}
			}
		case ".txnindex":
			err = dumpTxnIndex(w, path)
		case ".index":
			err = dumpIndex(w, path, 8)
		case ".timeindex":
			err = dumpIndex(w, path, 12)
		default:
			err = fmt.Errorf("do not know how to dump %s: want .log, .index, .timeindex or .txnindex", path)
		}
		if err != nil {
			w.Flush()
			fmt.Fprintf(stderr, "sluice dump-log: %v\n", err)
			status = 1
		}
	}
	return status
}

// baseOffsetOf reads the base offset from a segment file name.
func baseOffsetOf(path string) (int64, error) {
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	n, err := strconv.ParseInt(name, 10, 64)
	if err != nil || len(name) != 20 {
		return 0, fmt.Errorf("%s: not a segment file name (20-digit base offset)", path)
	}
	return n, nil
}

func dumpSegment(w io.Writer, path string, deep, data bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if base, err := baseOffsetOf(path); err == nil {
		fmt.Fprintf(w, "Log starting offset: %d\n", base)
	}
	r := bufio.NewReaderSize(f, 1<<20)
	var (
		pos  int64
		next int64 // offsets must not go back
		buf  []byte
		it   record.Iter
		head [record.LogOverhead]byte
	)
	for pos < st.Size() {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			fmt.Fprintf(w, "Found %d invalid bytes at the end of %s (torn batch header at position %d)\n", st.Size()-pos, filepath.Base(path), pos)
			return nil
		}
		size, _ := record.PeekSize(head[:])
		if !record.StoredSizeFits(size, st.Size()-pos) {
			fmt.Fprintf(w, "Found %d invalid bytes at the end of %s (batch at position %d claims %d bytes)\n", st.Size()-pos, filepath.Base(path), pos, size)
			return nil
		}
		if cap(buf) < size {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		copy(buf, head[:])
		if _, err := io.ReadFull(r, buf[record.LogOverhead:]); err != nil {
			return fmt.Errorf("%s: read at %d: %w", path, pos, err)
		}
		b := record.Batch(buf)
		// ValidateStored: a compacted log's cleaned batches (fewer
		// records than their offset span, gaps) are valid as stored.
		_, verr := record.ValidateStored(buf)
		if verr == nil && b.BaseOffset() < next {
			verr = fmt.Errorf("offset %d below the previous batch's next offset %d", b.BaseOffset(), next)
		}
		next = max(next, b.NextOffset())
		ts := "CreateTime"
		if b.LogAppendTime() {
			ts = "LogAppendTime"
		}
		fmt.Fprintf(w, "baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t position: %d %s: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: %t",
			b.BaseOffset(), b.LastOffset(), b.RecordCount(), b.BaseSequence(), b.LastSequence(), b.ProducerID(), b.ProducerEpoch(),
			b.LeaderEpoch(), b.Transactional(), b.Control(), pos, ts, b.MaxTimestamp(), size, b.Magic(), codecName(b.Codec()), b.CRC(), verr == nil)
		if verr == nil && b.Control() {
			// The marker, as Kafka's DumpLogSegments prints it per record.
			if m, ok, err := record.BatchEndTxnMarker(b); err != nil {
				fmt.Fprintf(w, " controlRecord: invalid (%v)", err)
			} else if ok {
				fmt.Fprintf(w, " endTxnMarker: %s coordinatorEpoch: %d", m.Type, m.CoordinatorEpoch)
			}
		}
		fmt.Fprintln(w)
		if verr != nil {
			fmt.Fprintf(w, "invalid batch at position %d: %v\n", pos, verr)
		} else if deep {
			it.Reset(b)
			for it.Next() {
				rec := it.Record()
				var keys []string
				rec.Headers(func(k, _ []byte) { keys = append(keys, string(k)) })
				fmt.Fprintf(w, "| offset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [%s]",
					it.Offset(), ts, it.Timestamp(), lenOrNull(rec.Key), lenOrNull(rec.Value),
					seqOf(b, rec.OffsetDelta), strings.Join(keys, ","))
				switch {
				case b.Control():
					if m, err := record.ParseEndTxnMarker(rec.Key, rec.Value); err == nil {
						fmt.Fprintf(w, " endTxnMarker: %s coordinatorEpoch: %d", m.Type, m.CoordinatorEpoch)
					} else if t, kerr := record.ParseControlKey(rec.Key); kerr == nil {
						fmt.Fprintf(w, " controlType: %s(%d)", t, int16(t))
					}
				case data:
					fmt.Fprintf(w, " key: %s payload: %s", printable(rec.Key), printable(rec.Value))
				}
				fmt.Fprintln(w)
			}
			if err := it.Err(); err != nil {
				fmt.Fprintf(w, "records of batch at position %d: %v\n", pos, err)
			}
		}
		pos += int64(size)
	}
	return nil
}

func seqOf(b record.Batch, delta int64) int32 {
	if b.BaseSequence() < 0 {
		return -1
	}
	return int32((int64(b.BaseSequence()) + delta) % (1 << 31))
}

func lenOrNull(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

func printable(b []byte) string {
	if b == nil {
		return "null"
	}
	return strconv.Quote(string(b))[1 : len(strconv.Quote(string(b)))-1]
}

func codecName(c int) string {
	switch c {
	case record.CodecNone:
		return "none"
	case record.CodecGzip:
		return "gzip"
	case record.CodecSnappy:
		return "snappy"
	case record.CodecLZ4:
		return "lz4"
	case record.CodecZstd:
		return "zstd"
	}
	return "unknown(" + strconv.Itoa(c) + ")"
}

// dumpIndex prints an offset index (8-byte entries: relative offset,
// position) or a time index (12-byte entries: timestamp, relative offset).
// Index files are preallocated; the first all-zero entry after the first
// marks the end of the written part.
func dumpIndex(w io.Writer, path string, entry int) error {
	base, err := baseOffsetOf(path)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(b)%entry != 0 {
		fmt.Fprintf(w, "index size %d is not a multiple of %d: the last %d bytes are ignored\n", len(b), entry, len(b)%entry)
	}
	for i := 0; i+entry <= len(b); i += entry {
		e := b[i : i+entry]
		if i > 0 && allZero(e) {
			break
		}
		if entry == 8 {
			rel := int32(binary.BigEndian.Uint32(e))
			p := int32(binary.BigEndian.Uint32(e[4:]))
			fmt.Fprintf(w, "offset: %d position: %d\n", base+int64(rel), p)
		} else {
			ts := int64(binary.BigEndian.Uint64(e))
			rel := int32(binary.BigEndian.Uint32(e[8:]))
			fmt.Fprintf(w, "timestamp: %d offset: %d\n", ts, base+int64(rel))
		}
	}
	return nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// dumpTxnIndex prints the entries of an aborted-transaction index (34-byte
// entries, see package segment), as Kafka's DumpLogSegments does.
func dumpTxnIndex(w io.Writer, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	entries, valid := segment.DecodeTxnIndex(b)
	for _, a := range entries {
		fmt.Fprintf(w, "version: 0 producerId: %d firstOffset: %d lastOffset: %d lastStableOffset: %d\n",
			a.ProducerID, a.FirstOffset, a.LastOffset, a.LastStableOffset)
	}
	if valid < len(b) {
		fmt.Fprintf(w, "Found %d invalid bytes at the end of %s (a torn entry or an unknown version at position %d)\n", len(b)-valid, filepath.Base(path), valid)
	}
	return nil
}
