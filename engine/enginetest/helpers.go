package enginetest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

// MakeBatch builds one uncompressed client batch (baseOffset 0, no leader
// epoch, no producer id) of n records with timestamps ts, ts+1, ...,
// each value valueSize bytes derived from seed. Exported for benchmarks.
func MakeBatch(n int, ts int64, valueSize int, seed byte) []byte {
	tss := make([]int64, n)
	for i := range tss {
		tss[i] = ts + int64(i)
	}
	return makeBatchTs(tss, valueSize, seed)
}

// makeBatchTs builds one client batch with one record per timestamp.
func makeBatchTs(tss []int64, valueSize int, seed byte) []byte {
	recs := make([]record.BuildRecord, len(tss))
	for i, ts := range tss {
		v := make([]byte, valueSize)
		for j := range v {
			v[j] = seed + byte(i) + byte(j)
		}
		recs[i] = record.BuildRecord{Key: []byte{'k', seed, byte(i)}, Value: v, Timestamp: ts}
	}
	return record.AppendBatch(nil, record.BatchOptions{
		LeaderEpoch:   record.NoPartitionLeader,
		ProducerID:    record.NoProducerID,
		ProducerEpoch: -1,
		BaseSequence:  record.NoSequence,
	}, recs)
}

// fixCRC recomputes the CRC of the batch at the start of b after a test
// changed a covered field on purpose.
func fixCRC(b []byte) {
	bt := record.Batch(b)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:bt.Size()], crc32.MakeTable(crc32.Castagnoli)))
}

// batchInfo is the header of one batch read back from a log.
type batchInfo struct {
	base, last int64
	epoch      int32
	size       int
}

// parseBatches validates data as whole batches back to back (as a reader
// must always see them; cleaned batches may have lost records) and returns
// their headers.
func parseBatches(t *testing.T, what string, data []byte) []batchInfo {
	t.Helper()
	bs, err := batchesOf(data)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return bs
}

// batchesOf is parseBatches returning an error, for use off the test
// goroutine.
func batchesOf(data []byte) ([]batchInfo, error) {
	var out []batchInfo
	for pos := 0; pos < len(data); {
		n, err := record.ValidateStored(data[pos:])
		if err != nil {
			return nil, fmt.Errorf("batch at byte %d of %d is not whole and valid: %w", pos, len(data), err)
		}
		b := record.Batch(data[pos : pos+n])
		out = append(out, batchInfo{base: b.BaseOffset(), last: b.LastOffset(), epoch: b.LeaderEpoch(), size: n})
		pos += n
	}
	return out, nil
}

// checkDense fails unless batches follow each other without gaps and the
// first holds offset: what an uncompacted log, written by leader appends,
// returns.
func checkDense(t *testing.T, what string, bs []batchInfo, offset int64) {
	t.Helper()
	if err := denseFrom(bs, offset); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// denseFrom is checkDense returning an error.
func denseFrom(bs []batchInfo, offset int64) error {
	if len(bs) == 0 {
		return nil
	}
	if bs[0].base > offset || bs[0].last < offset {
		return fmt.Errorf("first batch [%d,%d] does not hold offset %d", bs[0].base, bs[0].last, offset)
	}
	for i := 1; i < len(bs); i++ {
		if bs[i].base != bs[i-1].last+1 {
			return fmt.Errorf("batch %d starts at %d, previous ends at %d: offsets not dense", i, bs[i].base, bs[i-1].last)
		}
	}
	return nil
}

// increasingFrom is what every read must return: batches with increasing
// offsets, the first holding offset or, when offset lies in a gap (of a
// compacted log, or a follower's copy of one), the first after it.
func increasingFrom(bs []batchInfo, offset int64) error {
	if len(bs) == 0 {
		return nil
	}
	if bs[0].last < offset {
		return fmt.Errorf("first batch [%d,%d] ends before offset %d", bs[0].base, bs[0].last, offset)
	}
	for i := 1; i < len(bs); i++ {
		if bs[i].base <= bs[i-1].last {
			return fmt.Errorf("batch %d starts at %d, previous ends at %d: offsets not increasing", i, bs[i].base, bs[i-1].last)
		}
	}
	return nil
}

// read calls l.Read and returns a copy of the bytes, releasing the slice.
func read(t *testing.T, l engine.Log, offset int64, maxBytes int, upTo int64) ([]byte, error) {
	t.Helper()
	s, err := l.Read(offset, maxBytes, upTo)
	if err != nil {
		return nil, err
	}
	defer s.Release()
	data, err := s.AppendTo(nil)
	if err != nil {
		t.Fatalf("Read(%d): slice.AppendTo: %v", offset, err)
	}
	if int64(len(data)) != s.Len() {
		t.Fatalf("Read(%d): slice.Len %d but %d bytes", offset, s.Len(), len(data))
	}
	return data, nil
}

// mustRead is read that fails on error and checks the bytes are whole,
// valid batches with increasing offsets starting with the one that holds
// offset (or the first after it: see increasingFrom). Reads of dense logs
// are compared with the model by the callers.
func mustRead(t *testing.T, l engine.Log, offset int64, maxBytes int, upTo int64) ([]byte, []batchInfo) {
	t.Helper()
	data, err := read(t, l, offset, maxBytes, upTo)
	if err != nil {
		t.Fatalf("Read(%d, %d, %d): %v", offset, maxBytes, upTo, err)
	}
	what := fmt.Sprintf("Read(%d, %d, %d)", offset, maxBytes, upTo)
	bs := parseBatches(t, what, data)
	if err := increasingFrom(bs, offset); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return data, bs
}

// scan reads the whole log from offset to EndOffset with repeated Reads
// (a backend may stop a read at a segment end, as Kafka does) and returns
// the concatenated bytes.
func scan(t *testing.T, l engine.Log, from int64) []byte {
	t.Helper()
	var all []byte
	end := l.EndOffset()
	pos := from
	for i := 0; pos < end; i++ {
		if i > 1_000_000 {
			t.Fatalf("scan: no progress at offset %d", pos)
		}
		data, bs := mustRead(t, l, pos, 1<<20, -1)
		if len(bs) == 0 {
			t.Fatalf("scan: Read(%d) below EndOffset %d returned nothing", pos, end)
		}
		all = append(all, data...)
		pos = bs[len(bs)-1].last + 1
	}
	if pos != end {
		t.Fatalf("scan: ended at %d, EndOffset %d", pos, end)
	}
	return all
}

// model is what the suite expects a log to hold: the batches as the broker
// rewrote them, in order.
type model struct {
	batches [][]byte
}

// add records the batches in buf (already rewritten by Append) as a copy.
func (m *model) add(buf []byte) {
	for pos := 0; pos < len(buf); {
		n := record.Batch(buf[pos:]).Size()
		m.batches = append(m.batches, bytes.Clone(buf[pos:pos+n]))
		pos += n
	}
}

// from returns the concatenation of the batches whose last offset is >= offset.
func (m *model) from(offset int64) []byte {
	var out []byte
	for _, b := range m.batches {
		if record.Batch(b).LastOffset() >= offset {
			out = append(out, b...)
		}
	}
	return out
}

// size is the byte size of every batch.
func (m *model) size() int64 {
	var n int64
	for _, b := range m.batches {
		n += int64(len(b))
	}
	return n
}

// truncate drops the batches at or after offset (a batch boundary).
func (m *model) truncate(offset int64) {
	for i, b := range m.batches {
		if record.Batch(b).BaseOffset() >= offset {
			m.batches = m.batches[:i]
			return
		}
	}
}

// leader is a leader append with epoch e.
func leader(e int32) engine.AppendOptions {
	return engine.AppendOptions{AssignOffsets: true, LeaderEpoch: e}
}

// appendOK appends buf (as a leader unless opts says otherwise), records it
// in m when m is not nil, and checks AppendInfo against the batches.
func appendOK(t *testing.T, l engine.Log, m *model, buf []byte, opts engine.AppendOptions) engine.AppendInfo {
	t.Helper()
	end := l.EndOffset()
	info, err := l.Append(buf, opts)
	if err != nil {
		t.Fatalf("Append at end %d: %v", end, err)
	}
	// A leader's batches start at the log end; a follower's keep their
	// offsets, which may leave gaps (a compacted leader's log).
	first, last := end, end-1
	var records int64
	batches := 0
	for pos := 0; pos < len(buf); {
		b := record.Batch(buf[pos:])
		if !opts.AssignOffsets && pos == 0 {
			first = b.BaseOffset()
		}
		records += int64(b.RecordCount())
		last = b.LastOffset()
		batches++
		pos += b.Size()
	}
	if opts.AssignOffsets {
		last = end + records - 1
	}
	if info.FirstOffset != first {
		t.Fatalf("Append: FirstOffset %d, want %d (log end was %d)", info.FirstOffset, first, end)
	}
	if info.Batches != batches || info.Records != records || info.LastOffset != last {
		t.Fatalf("Append: info %+v, want %d batches, %d records, last offset %d", info, batches, records, last)
	}
	if got := l.EndOffset(); got != info.LastOffset+1 {
		t.Fatalf("Append: EndOffset %d after appending up to %d", got, info.LastOffset)
	}
	if m != nil {
		m.add(buf)
	}
	return info
}

// fill appends n one-batch appends of recs records each with valueSize
// byte values and timestamps starting at ts, step tsStep per batch.
func fill(t *testing.T, l engine.Log, m *model, n, recs, valueSize int, ts, tsStep int64, epoch int32) {
	t.Helper()
	for i := 0; i < n; i++ {
		appendOK(t, l, m, MakeBatch(recs, ts+int64(i)*tsStep, valueSize, byte(i)), leader(epoch))
	}
}

// concat joins batches into one append buffer.
func concat(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
