package enginetest

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

func appendCases() []testCase {
	return []testCase{
		{"RoundTrip", testRoundTrip},
		{"AppendAllOrNothing", testAppendAllOrNothing},
		{"FollowerAppend", testFollowerAppend},
		{"LogAppendTime", testLogAppendTime},
		{"LeaderEpochs", testLeaderEpochs},
	}
}

// testRoundTrip: the bytes read back are exactly the appended bytes after
// the broker's rewrite (baseOffset, partitionLeaderEpoch), whatever the
// caller does to its buffer after Append returns (it is not retained).
func testRoundTrip(t *testing.T, h *harness) {
	l := h.create(engine.LogConfig{})
	if l.StartOffset() != 0 || l.EndOffset() != 0 || l.Size() != 0 {
		t.Fatalf("new log: start %d end %d size %d, want 0 0 0", l.StartOffset(), l.EndOffset(), l.Size())
	}
	var m model
	// One batch, then three batches in one append.
	one := MakeBatch(3, baseTs, 50, 1)
	appendOK(t, l, &m, one, leader(7))
	multi := concat(MakeBatch(1, baseTs+10, 10, 2), MakeBatch(5, baseTs+20, 100, 3), MakeBatch(2, baseTs+30, 0, 4))
	info := appendOK(t, l, &m, multi, leader(7))
	if info.FirstOffset != 3 || info.LastOffset != 10 || info.Batches != 3 {
		t.Fatalf("second append info %+v, want offsets 3..10 in 3 batches", info)
	}
	// The caller reuses its buffers: the log must not see it.
	for i := range one {
		one[i] = 0xEE
	}
	for i := range multi {
		multi[i] = 0xEE
	}
	got := scan(t, l, 0)
	if !bytes.Equal(got, m.from(0)) {
		t.Fatalf("read back %d bytes differ from the %d appended (rewritten) bytes", len(got), len(m.from(0)))
	}
	bs := parseBatches(t, "round trip", got)
	for i, b := range bs {
		if b.epoch != 7 {
			t.Fatalf("batch %d: partitionLeaderEpoch %d, want 7 (the append's leader epoch)", i, b.epoch)
		}
	}
	if l.Size() != m.size() {
		t.Fatalf("Size %d, want %d (bytes of every batch)", l.Size(), m.size())
	}
}

// testAppendAllOrNothing: an append with one bad batch among good ones
// appends nothing, returns a typed error, and the next append continues at
// the unchanged end.
func testAppendAllOrNothing(t *testing.T, h *harness) {
	l := h.create(engine.LogConfig{MaxBatchBytes: 4096})
	var m model
	fill(t, l, &m, 2, 2, 20, baseTs, 10, 0)

	good := func() []byte { return MakeBatch(2, baseTs+100, 20, 9) }
	tests := []struct {
		name  string
		bad   func() []byte // the middle batch (or, for "empty", the whole input)
		want  error
		alone bool // bad is the whole append
	}{
		{"crc", func() []byte { b := good(); b[len(b)-1] ^= 0xFF; return b }, record.ErrCorrupt, false},
		{"count-mismatch", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[57:], 5) // recordCount != lastOffsetDelta+1
			fixCRC(b)
			return b
		}, record.ErrInvalid, false},
		{"magic", func() []byte { b := good(); b[16] = 1; return b }, record.ErrUnsupported, false},
		{"torn-tail", func() []byte { b := good(); return b[:len(b)-3] }, record.ErrCorrupt, true},
		{"short-header", func() []byte { return good()[:30] }, record.ErrCorrupt, true},
		{"empty", func() []byte { return nil }, record.ErrCorrupt, true},
		{"too-large", func() []byte { return MakeBatch(1, baseTs, 5000, 1) }, engine.ErrBatchTooLarge, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			end, size := l.EndOffset(), l.Size()
			var in []byte
			if tc.alone {
				in = concat(good(), tc.bad())
			} else {
				in = concat(good(), tc.bad(), good())
			}
			if tc.name == "empty" {
				in = nil
			}
			_, err := l.Append(in, leader(0))
			wantErr(t, "Append with a bad batch", err, tc.want)
			if l.EndOffset() != end || l.Size() != size {
				t.Fatalf("after a failed append: end %d size %d, want unchanged %d %d", l.EndOffset(), l.Size(), end, size)
			}
			if got := scan(t, l, 0); !bytes.Equal(got, m.from(0)) {
				t.Fatalf("a failed append left bytes in the log")
			}
			appendOK(t, l, &m, good(), leader(0))
		})
	}
}

// testFollowerAppend: with AssignOffsets false the batches keep the
// leader's offsets and epochs byte for byte; their offsets must increase
// from the log end offset on, gaps allowed (a compacted leader log has
// them), and a batch below the end or overlapping the one before is
// ErrOffsetMismatch, appending nothing.
func testFollowerAppend(t *testing.T, h *harness) {
	ldr := h.createID(engine.PartitionID{Topic: "leader", Partition: 0}, engine.LogConfig{})
	var m model
	fill(t, ldr, &m, 3, 2, 30, baseTs, 10, 4)
	appendOK(t, ldr, &m, MakeBatch(3, baseTs+50, 30, 7), leader(6))
	fetched := scan(t, ldr, 0)
	first := fetched[:record.Batch(fetched).Size()]
	second := fetched[len(first):]

	f := h.createID(engine.PartitionID{Topic: "follower", Partition: 0}, engine.LogConfig{})
	follower := engine.AppendOptions{AssignOffsets: false, LeaderEpoch: 99}
	// Overlap inside one append: the second batch again, after itself.
	overlap := concat(first, first)
	_, err := f.Append(bytes.Clone(overlap), follower)
	wantErr(t, "follower append with overlapping batches", err, engine.ErrOffsetMismatch)
	if f.EndOffset() != 0 || f.Size() != 0 {
		t.Fatalf("failed follower append left end %d size %d", f.EndOffset(), f.Size())
	}

	info := appendOK(t, f, nil, bytes.Clone(fetched), follower)
	if info.FirstOffset != 0 || info.LastOffset != 8 {
		t.Fatalf("follower append info %+v, want 0..8", info)
	}
	if got := scan(t, f, 0); !bytes.Equal(got, fetched) {
		t.Fatalf("follower log differs from the leader's bytes")
	}
	want := []engine.EpochEntry{ep(4, 0), ep(6, 6)}
	if got := f.LeaderEpochs(); !epochsEqual(got, want) {
		t.Fatalf("follower LeaderEpochs %v, want %v (from the batches' partitionLeaderEpoch)", got, want)
	}
	// Below the end: refused.
	_, err = f.Append(bytes.Clone(first), follower)
	wantErr(t, "follower append below the end", err, engine.ErrOffsetMismatch)

	// A gap: a second follower skips the leader's first batch, as if
	// the leader's cleaner had removed it, and reads the rest at their
	// offsets.
	g := h.createID(engine.PartitionID{Topic: "gapped", Partition: 0}, engine.LogConfig{})
	info, err = g.Append(bytes.Clone(second), follower)
	if err != nil || info.FirstOffset != record.Batch(second).BaseOffset() || g.EndOffset() != 9 {
		t.Fatalf("gapped follower append %+v, %v, end %d", info, err, g.EndOffset())
	}
	// A read at an offset in the gap starts at the first batch after it.
	data, err := read(t, g, 0, 1<<20, -1)
	if err != nil || !bytes.Equal(data, second) {
		t.Fatalf("read in the gap returned %d bytes (%v), want the %d after it", len(data), err, len(second))
	}
}

// testLogAppendTime: LogAppendTime > 0 marks each batch LogAppendTime with
// that maxTimestamp and a recomputed CRC, so every record's timestamp reads
// as the append time.
func testLogAppendTime(t *testing.T, h *harness) {
	l := h.create(engine.LogConfig{})
	const appendTime = 1_900_000_000_000
	in := concat(MakeBatch(3, baseTs, 10, 1), MakeBatch(2, baseTs+5, 10, 2))
	info := appendOK(t, l, nil, in, engine.AppendOptions{AssignOffsets: true, LeaderEpoch: 1, LogAppendTime: appendTime})
	if info.MaxTimestamp != appendTime || info.MaxTimestampOffset != 4 {
		t.Fatalf("info MaxTimestamp %d at %d, want %d at 4", info.MaxTimestamp, info.MaxTimestampOffset, int64(appendTime))
	}
	data, bs := mustRead(t, l, 0, 1<<20, -1)
	if len(bs) != 2 {
		t.Fatalf("read %d batches, want 2", len(bs))
	}
	var it record.Iter
	n := 0
	for pos := 0; pos < len(data); {
		b := record.Batch(data[pos:])
		if !b.LogAppendTime() || b.MaxTimestamp() != appendTime {
			t.Fatalf("batch at %d: LogAppendTime %v maxTimestamp %d, want true %d", b.BaseOffset(), b.LogAppendTime(), b.MaxTimestamp(), int64(appendTime))
		}
		it.Reset(b[:b.Size()])
		for it.Next() {
			if it.Timestamp() != appendTime {
				t.Fatalf("record %d: timestamp %d, want %d", it.Offset(), it.Timestamp(), int64(appendTime))
			}
			n++
		}
		noErr(t, "iterating", it.Err())
		pos += b.Size()
	}
	if n != 5 {
		t.Fatalf("iterated %d records, want 5", n)
	}
	off, ts, ok, err := l.OffsetForTimestamp(appendTime)
	noErr(t, "OffsetForTimestamp", err)
	if !ok || off != 0 || ts != appendTime {
		t.Fatalf("OffsetForTimestamp(append time) = %d, %d, %v; want 0, %d, true", off, ts, ok, int64(appendTime))
	}
}

// testLeaderEpochs: the history holds the first offset of each epoch seen
// in appended batches, ascending, and survives a clean reopen.
func testLeaderEpochs(t *testing.T, h *harness) {
	l := h.create(engine.LogConfig{})
	if got := l.LeaderEpochs(); len(got) != 0 {
		t.Fatalf("new log LeaderEpochs %v, want none", got)
	}
	fill(t, l, nil, 2, 2, 10, baseTs, 1, 0) // 0..3 epoch 0
	fill(t, l, nil, 1, 3, 10, baseTs, 1, 2) // 4..6 epoch 2
	fill(t, l, nil, 1, 1, 10, baseTs, 1, 2) // 7 epoch 2
	fill(t, l, nil, 1, 2, 10, baseTs, 1, 5) // 8..9 epoch 5
	want := []engine.EpochEntry{ep(0, 0), ep(2, 4), ep(5, 8)}
	if got := l.LeaderEpochs(); !epochsEqual(got, want) {
		t.Fatalf("LeaderEpochs %v, want %v", got, want)
	}
	// Returned history is a copy: changing it changes nothing.
	got := l.LeaderEpochs()
	got[0].Epoch = 42
	if again := l.LeaderEpochs(); !epochsEqual(again, want) {
		t.Fatalf("LeaderEpochs changed through a returned slice: %v", again)
	}
	_, bs := mustRead(t, l, 4, 1<<20, -1)
	if bs[0].epoch != 2 {
		t.Fatalf("batch at 4 has partitionLeaderEpoch %d, want 2", bs[0].epoch)
	}
	h.reopen()
	l = h.openID(defaultID, engine.LogConfig{})
	if got := l.LeaderEpochs(); !epochsEqual(got, want) {
		t.Fatalf("LeaderEpochs after reopen %v, want %v", got, want)
	}
	gotE, end := engine.EndOffsetForEpoch(l.LeaderEpochs(), 3, l.EndOffset())
	if gotE != 2 || end != 8 {
		t.Fatalf("EndOffsetForEpoch(3) = %d, %d; want 2, 8", gotE, end)
	}
}

func epochsEqual(a, b []engine.EpochEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ep is an epoch entry.
func ep(epoch int32, start int64) engine.EpochEntry {
	return engine.EpochEntry{Epoch: epoch, StartOffset: start}
}
