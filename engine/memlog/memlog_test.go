package memlog

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

var pid = engine.PartitionID{Topic: "t", Partition: 0}

// batch builds one uncompressed batch of n records with timestamps ts, ts+1, ...
func batch(n int, ts int64, value string) []byte {
	recs := make([]record.BuildRecord, n)
	for i := range recs {
		recs[i] = record.BuildRecord{Value: []byte(fmt.Sprintf("%s-%d", value, i)), Timestamp: ts + int64(i)}
	}
	return record.AppendBatch(nil, record.BatchOptions{ProducerID: -1}, recs)
}

func openLog(t testing.TB, cfg engine.LogConfig) (engine.Store, engine.Log) {
	t.Helper()
	s, err := engine.Open("memory", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	l, err := s.CreateLog(pid, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, l
}

func mustAppend(t testing.TB, l engine.Log, b []byte, epoch int32) engine.AppendInfo {
	t.Helper()
	info, err := l.Append(b, engine.AppendOptions{AssignOffsets: true, LeaderEpoch: epoch})
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// offsetsOf returns the base offsets of the batches in b.
func offsetsOf(b []byte) []int64 {
	var out []int64
	for len(b) > 0 {
		bt := record.Batch(b)
		out = append(out, bt.BaseOffset())
		b = b[bt.Size():]
	}
	return out
}

func TestRead(t *testing.T) {
	_, l := openLog(t, engine.LogConfig{})
	one := batch(3, 1000, "v") // offsets 0-2, 3-5, 6-8, 9-11
	for i := 0; i < 4; i++ {
		mustAppend(t, l, append([]byte(nil), one...), 0)
	}
	size := len(one)
	tests := []struct {
		name     string
		offset   int64
		maxBytes int
		upTo     int64
		want     []int64
		err      error
	}{
		{"all", 0, 1 << 20, -1, []int64{0, 3, 6, 9}, nil},
		{"mid batch", 4, 1 << 20, -1, []int64{3, 6, 9}, nil},
		{"max bytes", 0, 2 * size, -1, []int64{0, 3}, nil},
		{"kip-74 one batch", 0, 1, -1, []int64{0}, nil},
		{"kip-74 zero", 7, 0, -1, []int64{6}, nil},
		{"up to", 0, 1 << 20, 6, []int64{0, 3}, nil},
		{"up to mid batch", 0, 1 << 20, 7, []int64{0, 3}, nil},
		{"up to inside first", 3, 1 << 20, 4, nil, nil},
		{"at up to", 6, 1 << 20, 6, nil, nil},
		{"at end", 12, 1 << 20, -1, nil, nil},
		{"past end", 13, 1 << 20, -1, nil, engine.ErrOffsetOutOfRange},
		{"negative", -1, 1 << 20, -1, nil, engine.ErrOffsetOutOfRange},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := l.Read(tc.offset, tc.maxBytes, tc.upTo)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			defer s.Release()
			if got := offsetsOf(s.Bytes()); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("batches %v, want %v", got, tc.want)
			}
			if _, _, err := record.ValidateAll(s.Bytes()); len(tc.want) > 0 && err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestReadImmutable checks that bytes returned by Read never change, even
// when the log is truncated under them and new batches take their offsets.
func TestReadImmutable(t *testing.T) {
	_, l := openLog(t, engine.LogConfig{})
	for i := 0; i < 3; i++ {
		mustAppend(t, l, batch(2, 1000, "old"), 0)
	}
	s, err := l.Read(0, 1<<20, -1)
	if err != nil {
		t.Fatal(err)
	}
	held := append([]byte(nil), s.Bytes()...)
	if err := l.Truncate(2); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		mustAppend(t, l, batch(2, 2000, "NEW"), 1)
	}
	if !bytes.Equal(s.Bytes(), held) {
		t.Fatal("bytes returned by Read changed after Truncate+Append")
	}
	s.Release()
	s2, err := l.Read(2, 1<<20, -1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(s2.Bytes(), []byte("NEW")) || bytes.Contains(s2.Bytes(), []byte("old")) {
		t.Fatal("read after truncate+append does not see the new batches")
	}
}

func TestAppendAllOrNothing(t *testing.T) {
	_, l := openLog(t, engine.LogConfig{})
	good := batch(2, 1, "a")
	bad := batch(2, 1, "b")
	bad[len(bad)-1] ^= 0xff // breaks the CRC
	if _, err := l.Append(append(good, bad...), engine.AppendOptions{AssignOffsets: true}); !errors.Is(err, record.ErrCorrupt) {
		t.Fatalf("err = %v, want ErrCorrupt", err)
	}
	if l.EndOffset() != 0 || l.Size() != 0 {
		t.Fatalf("end %d size %d after a failed append", l.EndOffset(), l.Size())
	}
	// A follower append must not start below the log end.
	b := batch(1, 1, "f")
	record.Batch(b).SetBaseOffset(-1)
	if _, err := l.Append(b, engine.AppendOptions{}); !errors.Is(err, engine.ErrOffsetMismatch) {
		t.Fatalf("err = %v, want ErrOffsetMismatch", err)
	}
	record.Batch(b).SetBaseOffset(0)
	if info, err := l.Append(b, engine.AppendOptions{}); err != nil || info.LastOffset != 0 {
		t.Fatalf("follower append: %+v, %v", info, err)
	}
}

func TestTruncate(t *testing.T) {
	_, l := openLog(t, engine.LogConfig{SegmentBytes: 200})
	for i := int32(0); i < 6; i++ { // offsets 0,2,4,...; epochs 0..5
		mustAppend(t, l, batch(2, 1000, "v"), i)
	}
	if err := l.Truncate(5); !errors.Is(err, engine.ErrOffsetOutOfRange) {
		t.Fatalf("truncate inside a batch: %v", err)
	}
	if err := l.Truncate(100); err != nil || l.EndOffset() != 12 {
		t.Fatalf("truncate past end: %v, end %d", err, l.EndOffset())
	}
	if err := l.Truncate(6); err != nil {
		t.Fatal(err)
	}
	if l.EndOffset() != 6 {
		t.Fatalf("end %d, want 6", l.EndOffset())
	}
	if got := l.LeaderEpochs(); len(got) != 3 || got[2] != (engine.EpochEntry{Epoch: 2, StartOffset: 4}) {
		t.Fatalf("epochs %v", got)
	}
	if s, err := l.Read(6, 1<<20, -1); err != nil || s.Len() != 0 {
		t.Fatalf("read at new end: %d bytes, %v", s.Len(), err)
	}
	if info := mustAppend(t, l, batch(1, 1000, "x"), 9); info.FirstOffset != 6 {
		t.Fatalf("append after truncate at %d", info.FirstOffset)
	}
	if err := l.Truncate(0); err != nil || l.EndOffset() != 0 || l.Size() != 0 {
		t.Fatalf("truncate to 0: %v end %d size %d", err, l.EndOffset(), l.Size())
	}
}

func TestDeleteBeforeAndRetention(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	b := batch(1, 0, "v")
	// Three batches per chunk.
	cfg := engine.LogConfig{SegmentBytes: int64(3 * len(b)), RetentionMs: -1, RetentionBytes: -1}
	_, l := openLog(t, cfg)
	for i := 0; i < 10; i++ { // chunks [0-2] [3-5] [6-8] [9]; timestamps = offset*1000
		mustAppend(t, l, batch(1, int64(i)*1000, "v"), 0)
	}
	if err := l.DeleteBefore(11); !errors.Is(err, engine.ErrOffsetOutOfRange) {
		t.Fatalf("delete past end: %v", err)
	}
	if err := l.DeleteBefore(1); err != nil || l.StartOffset() != 1 {
		t.Fatalf("delete before 1: %v, start %d", err, l.StartOffset())
	}
	if _, err := l.Read(0, 100, -1); !errors.Is(err, engine.ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
	if got := l.Size(); got != int64(10*len(b)) {
		t.Fatalf("size %d: chunk 0 should be kept until wholly below start", got)
	}

	cfg.RetentionBytes = int64(5 * len(b))
	if err := l.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	start, err := l.ApplyRetention(now)
	if err != nil || start != 3 { // 7 batches left; dropping [3-5] would leave 4 < 5
		t.Fatalf("retention by bytes: start %d, %v", start, err)
	}
	cfg.RetentionBytes = -1
	cfg.RetentionMs = time.Hour
	l.SetConfig(cfg)
	if start, _ := l.ApplyRetention(now.Add(2 * time.Hour)); start != 9 {
		t.Fatalf("retention by time keeps the active chunk: start %d, want 9", start)
	}
	if l.Size() != int64(len(b)) {
		t.Fatalf("size %d", l.Size())
	}
}

func TestOffsetForTimestamp(t *testing.T) {
	_, l := openLog(t, engine.LogConfig{SegmentBytes: 300})
	// Batch timestamps: 100-102, 50-52 (out of order), 200-202, 202-204.
	for _, ts := range []int64{100, 50, 200, 202} {
		mustAppend(t, l, batch(3, ts, "v"), 0)
	}
	tests := []struct {
		ts         int64
		off, tsOut int64
		ok         bool
	}{
		{0, 0, 100, true},
		{101, 1, 101, true},
		{103, 6, 200, true},
		{204, 11, 204, true},
		{205, 0, 0, false},
		{engine.MaxTimestampQuery, 11, 204, true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("ts=%d", tc.ts), func(t *testing.T) {
			off, ts, ok, err := l.OffsetForTimestamp(tc.ts)
			if err != nil || ok != tc.ok || (ok && (off != tc.off || ts != tc.tsOut)) {
				t.Fatalf("got (%d, %d, %v, %v), want (%d, %d, %v)", off, ts, ok, err, tc.off, tc.tsOut, tc.ok)
			}
		})
	}
	if err := l.DeleteBefore(2); err != nil {
		t.Fatal(err)
	}
	if off, _, _, _ := l.OffsetForTimestamp(0); off != 2 {
		t.Fatalf("after DeleteBefore(2): offset %d, want 2", off)
	}
}

func TestMaxTimestampTies(t *testing.T) {
	_, l := openLog(t, engine.LogConfig{})
	recs := []record.BuildRecord{{Timestamp: 5}, {Timestamp: 9}, {Timestamp: 9}, {Timestamp: 1}}
	mustAppend(t, l, record.AppendBatch(nil, record.BatchOptions{ProducerID: -1}, recs), 0)
	if off, ts, ok, _ := l.OffsetForTimestamp(engine.MaxTimestampQuery); !ok || off != 2 || ts != 9 {
		t.Fatalf("got %d %d %v, want offset 2 ts 9", off, ts, ok)
	}
	if _, _, ok, _ := openLogEmpty(t).OffsetForTimestamp(engine.MaxTimestampQuery); ok {
		t.Fatal("empty log has a max timestamp")
	}
}

func openLogEmpty(t *testing.T) engine.Log {
	s, err := engine.Open("memory", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	l, err := s.CreateLog(engine.PartitionID{Topic: "e"}, engine.LogConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestStoreReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := engine.Open("memory", engine.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Open("memory", engine.Options{Dir: dir}); !errors.Is(err, ErrStoreOpen) {
		t.Fatalf("second open: %v", err)
	}
	l, _ := s.CreateLog(pid, engine.LogConfig{})
	if _, err := s.CreateLog(pid, engine.LogConfig{}); !errors.Is(err, engine.ErrLogExists) {
		t.Fatalf("create twice: %v", err)
	}
	mustAppend(t, l, batch(4, 1, "v"), 3)
	if l2, _ := s.OpenLog(pid, engine.LogConfig{}); l2 != l {
		t.Fatal("OpenLog of an open log returned another Log")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(0, 100, -1); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
	s, err = engine.Open("memory", engine.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err = s.OpenLog(pid, engine.LogConfig{})
	if err != nil || l.EndOffset() != 4 || len(l.LeaderEpochs()) != 1 {
		t.Fatalf("reopened log: %v", err)
	}
	if err := s.DeleteLog(pid); err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenLog(pid, engine.LogConfig{}); !errors.Is(err, engine.ErrNoLog) {
		t.Fatalf("open deleted: %v", err)
	}
	if ids, _ := s.ListLogs(); len(ids) != 0 {
		t.Fatalf("logs after delete: %v", ids)
	}
}

// TestConcurrentAppendRead runs appends beside readers (run with -race):
// every read sees whole, valid batches with dense offsets.
func TestConcurrentAppendRead(t *testing.T) {
	_, l := openLog(t, engine.LogConfig{SegmentBytes: 4096})
	const appends = 500
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < appends; i++ {
			if _, err := l.Append(batch(3, int64(i), "c"), engine.AppendOptions{AssignOffsets: true}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := int64(0)
			for i := 0; i < 4*appends && next < 3*appends; i++ {
				s, err := l.Read(next, 1000, -1)
				if err != nil {
					t.Error(err)
					return
				}
				b := s.Bytes()
				if _, _, err := record.ValidateAll(b); len(b) > 0 && err != nil {
					t.Error(err)
					return
				}
				for _, o := range offsetsOf(b) {
					if o != next {
						t.Errorf("batch at %d, want %d", o, next)
						return
					}
					next += 3
				}
				s.Release()
				l.OffsetForTimestamp(int64(i))
			}
		}()
	}
	wg.Wait()
}

// TestAppendAllocs: an append that does not roll a chunk allocates nothing
// (a new block is rare enough to average out to 0 over the runs), so
// BenchmarkAppend reports 0 allocs/op; reads stop at block ends but read
// back every batch.
func TestAppendAllocs(t *testing.T) {
	_, l := openLog(t, engine.LogConfig{SegmentBytes: 1 << 30})
	b := batch(4, 1, "v")
	opts := engine.AppendOptions{AssignOffsets: true, LeaderEpoch: 1}
	for i := 0; i < 1000; i++ { // past the first few doublings
		if _, err := l.Append(b, opts); err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := l.Append(b, opts); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Append allocates %.2f times per call, want 0", allocs)
	}
	var got []int64
	for next := int64(0); next < l.EndOffset(); next += 4 {
		s, err := l.Read(next, 1<<30, -1)
		if err != nil {
			t.Fatal(err)
		}
		offs := offsetsOf(s.Bytes())
		s.Release()
		if len(offs) == 0 {
			t.Fatalf("Read(%d) returned nothing", next)
		}
		got = append(got, offs...)
		next = offs[len(offs)-1]
	}
	if len(got) != 1201 || got[1200] != 1200*4 {
		t.Fatalf("read back %d batches, last at %d", len(got), got[len(got)-1])
	}
}

// TestGaps: a follower copying a compacted leader gets offset gaps between
// batches and between chunks; reads in a gap start at the next batch, also
// across a chunk boundary, and Truncate may cut in a gap.
func TestGaps(t *testing.T) {
	_, l := openLog(t, engine.LogConfig{SegmentBytes: 150})
	follower := engine.AppendOptions{}
	at := func(base int64, n int) []byte {
		b := batch(n, 1000+base, "g")
		record.Batch(b).SetBaseOffset(base)
		return b
	}
	// Batches [3,4], [10,12], [20,21], [30,30]: about 100 bytes each, so
	// every batch rolls a chunk.
	for _, b := range [][]byte{at(3, 2), at(10, 3), at(20, 2), at(30, 1)} {
		if _, err := l.Append(b, follower); err != nil {
			t.Fatal(err)
		}
	}
	if l.EndOffset() != 31 {
		t.Fatalf("end %d, want 31", l.EndOffset())
	}
	for _, c := range []struct {
		offset int64
		first  int64
	}{{0, 3}, {3, 3}, {4, 3}, {5, 10}, {11, 10}, {13, 20}, {25, 30}, {30, 30}} {
		s, err := l.Read(c.offset, 1, -1)
		if err != nil {
			t.Fatalf("Read(%d): %v", c.offset, err)
		}
		b, _ := s.AppendTo(nil)
		if got := offsetsOf(b); len(got) != 1 || got[0] != c.first {
			t.Fatalf("Read(%d) got batches %v, want the one at %d", c.offset, got, c.first)
		}
	}
	if err := l.Truncate(11); !errors.Is(err, engine.ErrOffsetOutOfRange) {
		t.Fatalf("truncate inside a batch: %v", err)
	}
	if err := l.Truncate(16); err != nil || l.EndOffset() != 16 {
		t.Fatalf("truncate in a gap: %v, end %d", err, l.EndOffset())
	}
	if s, err := l.Read(14, 1<<20, -1); err != nil || s.Len() != 0 {
		t.Fatalf("read in the trailing gap: %d bytes, %v", s.Len(), err)
	}
	if _, err := l.Append(at(16, 1), follower); err != nil {
		t.Fatal(err)
	}
	if s, err := l.Read(14, 1<<20, -1); err != nil || s.Len() == 0 {
		t.Fatalf("read after refill: %d bytes, %v", s.Len(), err)
	}
	if err := l.DeleteBefore(6); err != nil || l.StartOffset() != 6 {
		t.Fatalf("DeleteBefore in a gap: %v, start %d", err, l.StartOffset())
	}
	if off, _, ok, err := l.OffsetForTimestamp(0); err != nil || !ok || off != 10 {
		t.Fatalf("OffsetForTimestamp: %d %v %v, want 10", off, ok, err)
	}
}
