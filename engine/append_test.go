package engine

import (
	"bytes"
	"errors"
	"testing"

	"github.com/sluice/sluice/record"
)

// clientBatch is an uncompressed batch as a client sends it: base offset 0,
// no leader epoch, n records stamped ts, ts+1, ...
func clientBatch(n int, ts int64) []byte {
	recs := make([]record.BuildRecord, n)
	for i := range recs {
		recs[i] = record.BuildRecord{Value: []byte("value"), Timestamp: ts + int64(i)}
	}
	return record.AppendBatch(nil, record.BatchOptions{LeaderEpoch: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
}

func concatBatches(bs ...[]byte) []byte { return bytes.Join(bs, nil) }

// TestPrepareAppendLeader: offsets numbered from next, epoch written, info
// filled, CRC still valid (base offset and epoch lie outside it).
func TestPrepareAppendLeader(t *testing.T) {
	buf := concatBatches(clientBatch(3, 100), clientBatch(1, 500), clientBatch(2, 200))
	info, err := PrepareAppend(buf, 50, AppendOptions{AssignOffsets: true, LeaderEpoch: 7}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := AppendInfo{FirstOffset: 50, LastOffset: 55, Batches: 3, Records: 6, MaxTimestamp: 500, MaxTimestampOffset: 53}
	if info != want {
		t.Fatalf("info %+v, want %+v", info, want)
	}
	next := int64(50)
	for pos := 0; pos < len(buf); {
		n, err := record.Validate(buf[pos:])
		if err != nil {
			t.Fatalf("rewritten batch at %d: %v", pos, err)
		}
		b := record.Batch(buf[pos:])
		if b.BaseOffset() != next || b.LeaderEpoch() != 7 || b.LogAppendTime() {
			t.Fatalf("batch at %d: base %d epoch %d LAT %v; want %d 7 false", pos, b.BaseOffset(), b.LeaderEpoch(), b.LogAppendTime(), next)
		}
		next = b.NextOffset()
		pos += n
	}
}

// TestPrepareAppendLogAppendTime: every batch becomes LogAppendTime with
// the given time, CRC recomputed; info reports that time.
func TestPrepareAppendLogAppendTime(t *testing.T) {
	buf := concatBatches(clientBatch(2, 100), clientBatch(2, 900))
	info, err := PrepareAppend(buf, 0, AppendOptions{AssignOffsets: true, LogAppendTime: 7777}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if info.MaxTimestamp != 7777 || info.MaxTimestampOffset != 3 {
		t.Fatalf("info %+v, want max timestamp 7777 at 3", info)
	}
	if _, _, err := record.ValidateAll(buf); err != nil {
		t.Fatalf("after LogAppendTime rewrite: %v", err)
	}
	for pos := 0; pos < len(buf); pos += record.Batch(buf[pos:]).Size() {
		if b := record.Batch(buf[pos:]); !b.LogAppendTime() || b.MaxTimestamp() != 7777 {
			t.Fatalf("batch at %d not rewritten", pos)
		}
	}
}

// TestPrepareAppendFollower: batches keep their offsets and epochs and must
// continue from next.
func TestPrepareAppendFollower(t *testing.T) {
	a, b := clientBatch(2, 10), clientBatch(3, 20)
	record.Batch(a).SetBaseOffset(10)
	record.Batch(a).SetLeaderEpoch(3)
	record.Batch(b).SetBaseOffset(12)
	record.Batch(b).SetLeaderEpoch(4)
	good := concatBatches(a, b)
	orig := bytes.Clone(good)
	info, err := PrepareAppend(good, 10, AppendOptions{LeaderEpoch: 99}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if info.FirstOffset != 10 || info.LastOffset != 14 || info.Batches != 2 {
		t.Fatalf("info %+v, want 10..14 in 2 batches", info)
	}
	if !bytes.Equal(good, orig) {
		t.Fatalf("follower append rewrote the batches")
	}
	tests := []struct {
		name string
		buf  []byte
		next int64
	}{
		{"first-below-end", bytes.Clone(orig), 11},
		{"overlap", concatBatches(a, func() []byte { c := bytes.Clone(b); record.Batch(c).SetBaseOffset(11); return c }()), 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := PrepareAppend(tc.buf, tc.next, AppendOptions{}, 0)
			if !errors.Is(err, ErrOffsetMismatch) {
				t.Fatalf("err %v, want ErrOffsetMismatch", err)
			}
		})
	}
}

// TestPrepareAppendErrors: validation runs before any rewrite, errors are
// classified, and the limit applies per batch.
func TestPrepareAppendErrors(t *testing.T) {
	big := clientBatch(50, 0)
	tests := []struct {
		name string
		buf  []byte
		max  int
		want error
	}{
		{"empty", nil, 0, record.ErrCorrupt},
		{"crc-second", func() []byte { b := concatBatches(clientBatch(1, 0), clientBatch(1, 0)); b[len(b)-1] ^= 1; return b }(), 0, record.ErrCorrupt},
		{"magic", func() []byte { b := clientBatch(1, 0); b[16] = 0; return b }(), 0, record.ErrUnsupported},
		{"too-large", concatBatches(clientBatch(1, 0), big), len(big) - 1, ErrBatchTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := bytes.Clone(tc.buf)
			_, err := PrepareAppend(tc.buf, 5, AppendOptions{AssignOffsets: true, LeaderEpoch: 1}, tc.max)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if tc.want != ErrBatchTooLarge && !bytes.Equal(before, tc.buf) {
				t.Fatalf("a batch was rewritten although validation failed")
			}
		})
	}
	if _, err := PrepareAppend(big, 0, AppendOptions{AssignOffsets: true}, len(big)); err != nil {
		t.Fatalf("batch exactly at the limit: %v", err)
	}
}

// TestPrepareAppendNoAlloc: it runs on every produce; it must not allocate.
func TestPrepareAppendNoAlloc(t *testing.T) {
	buf := concatBatches(clientBatch(3, 0), clientBatch(3, 0))
	next := int64(0)
	if n := testing.AllocsPerRun(100, func() {
		info, err := PrepareAppend(buf, next, AppendOptions{AssignOffsets: true, LeaderEpoch: 1, LogAppendTime: 5}, 0)
		if err != nil {
			t.Fatal(err)
		}
		next = info.LastOffset + 1
	}); n != 0 {
		t.Fatalf("PrepareAppend allocates %.1f times", n)
	}
}

func TestPrepareAppendPrevalidatedChecksFraming(t *testing.T) {
	good := record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, BaseSequence: -1},
		[]record.BuildRecord{{Value: []byte("v"), Timestamp: 1}})
	cases := []struct {
		name string
		buf  []byte
		ok   bool
	}{
		{"whole batch", good, true},
		{"empty", nil, false},
		{"cut short", good[:len(good)-1], false},
		{"trailing bytes", append(append([]byte(nil), good...), 1, 2, 3), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			buf := append([]byte(nil), tc.buf...)
			_, err := PrepareAppend(buf, 0, AppendOptions{AssignOffsets: true, Prevalidated: true}, 0)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestContinuesLog(t *testing.T) {
	for _, tc := range []struct {
		base, next int64
		gaps, want bool
	}{
		{10, 10, false, true},
		{10, 10, true, true},
		{11, 10, false, false},
		{11, 10, true, true},
		{9, 10, false, false},
		{9, 10, true, false},
	} {
		if got := ContinuesLog(tc.base, tc.next, tc.gaps); got != tc.want {
			t.Errorf("ContinuesLog(%d, %d, %v) = %v, want %v", tc.base, tc.next, tc.gaps, got, tc.want)
		}
	}
}
