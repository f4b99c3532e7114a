package enginetest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/engine/cleaner"
	"github.com/sluice/sluice/record"
)

// compactionCases check engine.Compactable through the log cleaner itself
// (engine/cleaner.Cleaner.Clean reads with Log.Read and writes with
// ReplaceSegments), so a backend is held to what cleaning needs: offset
// gaps everywhere, an atomic segment swap, a durable checkpoint. The
// expected log is computed from a model of what was written, with Kafka's
// rule: after a round that cleaned up to CleanedTo, each key keeps only its
// latest record below CleanedTo, and everything from CleanedTo on is as
// written.
//
// The memory backend keeps its logs across a store reopen on the same
// directory in one process (memlog's package doc), so the reopen checks
// run for it too.
func compactionCases() []testCase {
	return []testCase{
		{"CompactLatestPerKey", testCompactLatestPerKey},
		{"CompactTombstones", testCompactTombstones},
		{"CompactThenAppendAndFollow", testCompactThenAppendAndFollow},
		{"CompactTruncateAndDeleteBefore", testCompactTruncateAndDeleteBefore},
		{"CompactReplaceConflict", testCompactReplaceConflict},
		{"CompactCheckpointReopen", testCompactCheckpointReopen},
		{"CompactProducerEmptyBatches", testCompactProducerEmptyBatches},
		{"CompactMergesSmallSegments", testCompactMergesSmallSegments},
	}
}

// compactCfg is a compacted topic with small segments, cleaned whenever
// anything is dirty, tombstones kept an hour after their first cleaning.
var compactCfg = engine.LogConfig{
	Compact:                true,
	SegmentBytes:           4096,
	DeleteRetention:        time.Hour,
	MinCleanableDirtyRatio: 0,
}

// keyed is one record of the model: what was written at offset.
type keyed struct {
	offset int64
	key    string
	value  string
	null   bool // a tombstone
}

func (r keyed) String() string {
	if r.null {
		return fmt.Sprintf("%d:%s=null", r.offset, r.key)
	}
	return fmt.Sprintf("%d:%s=%s", r.offset, r.key, r.value)
}

// keyedModel records every keyed record appended, in offset order.
type keyedModel struct {
	recs []keyed
}

// write appends one leader batch of recs (offsets ignored) with timestamp
// ts and records their offsets.
func (m *keyedModel) write(t *testing.T, l engine.Log, ts int64, recs ...keyed) {
	t.Helper()
	m.writeAs(t, l, nil, ts, recs...)
}

// idempotent is an idempotent producer writing through writeAs: its id
// and the sequence of its next batch.
type idempotent struct {
	id  int64
	seq int32
}

// writeAs is write for producer p (nil: none), whose sequence it
// advances.
func (m *keyedModel) writeAs(t *testing.T, l engine.Log, p *idempotent, ts int64, recs ...keyed) engine.AppendInfo {
	t.Helper()
	br := make([]record.BuildRecord, len(recs))
	for i, r := range recs {
		br[i] = record.BuildRecord{Key: []byte(r.key), Timestamp: ts}
		if !r.null {
			br[i].Value = []byte(r.value)
		}
	}
	opts := record.BatchOptions{
		LeaderEpoch:   record.NoPartitionLeader,
		ProducerID:    record.NoProducerID,
		ProducerEpoch: -1,
		BaseSequence:  record.NoSequence,
	}
	if p != nil {
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = p.id, 0, p.seq
		p.seq += int32(len(recs))
	}
	b := record.AppendBatch(nil, opts, br)
	info := appendOK(t, l, nil, b, leader(1))
	for i, r := range recs {
		r.offset = info.FirstOffset + int64(i)
		m.recs = append(m.recs, r)
	}
	return info
}

// round writes every key in keys once, batchSize records per batch, with
// values naming the round.
func (m *keyedModel) round(t *testing.T, l engine.Log, n int, keys []string, batchSize int, ts int64) {
	t.Helper()
	for i := 0; i < len(keys); i += batchSize {
		var recs []keyed
		for _, k := range keys[i:min(i+batchSize, len(keys))] {
			recs = append(recs, keyed{key: k, value: fmt.Sprintf("r%d-%s", n, k)})
		}
		m.write(t, l, ts, recs...)
	}
}

// expect is what a log must hold from start after cleaning up to
// cleanedTo: below it the latest record of each key (without tombstones
// when dropTombstones), from it on everything.
func (m *keyedModel) expect(start, cleanedTo int64, dropTombstones bool) []keyed {
	latest := map[string]int64{}
	for _, r := range m.recs {
		if r.offset < cleanedTo {
			latest[r.key] = r.offset
		}
	}
	var out []keyed
	for _, r := range m.recs {
		switch {
		case r.offset < start:
		case r.offset >= cleanedTo:
			out = append(out, r)
		case latest[r.key] == r.offset && !(r.null && dropTombstones):
			out = append(out, r)
		}
	}
	return out
}

// keys returns n key names.
func keyNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

// scanGapped reads a possibly compacted log from offset to its end (a read
// in a gap starts at the next batch) and returns the bytes and the
// records.
func scanGapped(t *testing.T, l engine.Log, from int64) ([]byte, []keyed) {
	t.Helper()
	var all []byte
	var recs []keyed
	end := l.EndOffset()
	for pos := from; pos < end; {
		data, bs := mustRead(t, l, pos, 1<<20, -1)
		if len(bs) == 0 {
			break // a gap up to the end (a Truncate into a gap)
		}
		if len(all) > 0 && bs[0].base < pos {
			t.Fatalf("Read(%d) returned a batch at %d already read", pos, bs[0].base)
		}
		all = append(all, data...)
		pos = bs[len(bs)-1].last + 1
	}
	var it record.Iter
	for pos := 0; pos < len(all); {
		b := record.Batch(all[pos:])
		pos += b.Size()
		it.Reset(b)
		for it.Next() {
			r := it.Record()
			recs = append(recs, keyed{offset: it.Offset(), key: string(r.Key), value: string(r.Value), null: r.Value == nil})
		}
		if err := it.Err(); err != nil {
			t.Fatalf("batch at %d: %v", b.BaseOffset(), err)
		}
	}
	return all, recs
}

// checkRecords fails unless got and want are the same records.
func checkRecords(t *testing.T, what string, got, want []keyed) {
	t.Helper()
	n := min(len(got), len(want))
	for i := 0; i < n; i++ {
		if got[i] != want[i] {
			t.Fatalf("%s: record %d is %v, want %v (%d records, want %d)", what, i, got[i], want[i], len(got), len(want))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d (first extra: got %v, want %v)", what, len(got), len(want), got[n:min(n+1, len(got))], want[n:min(n+1, len(want))])
	}
}

func compactable(t *testing.T, h *harness, l engine.Log) engine.Compactable {
	t.Helper()
	c, ok := l.(engine.Compactable)
	if !ok {
		t.Fatalf("the %s backend's %T is not an engine.Compactable", h.backend, l)
	}
	return c
}

// clean runs one cleaner round on l at the harness clock's time and
// checks that it cleaned something without moving the log's bounds.
func clean(t *testing.T, h *harness, l engine.Log, cfg engine.LogConfig) cleaner.Result {
	t.Helper()
	compactable(t, h, l)
	c, err := cleaner.New(1<<20, nil)
	noErr(t, "cleaner.New", err)
	start, end := l.StartOffset(), l.EndOffset()
	res, err := c.Clean(cleaner.Target{ID: defaultID, Log: l, Config: cfg.WithDefaults(), Bound: -1}, h.clock.Now())
	noErr(t, "Clean", err)
	if res.CleanedTo <= res.Progress.FirstDirty {
		t.Fatalf("Clean did nothing: %+v", res)
	}
	if l.StartOffset() != start || l.EndOffset() != end {
		t.Fatalf("Clean moved [start, end) from [%d, %d) to [%d, %d)", start, end, l.StartOffset(), l.EndOffset())
	}
	if got := l.(engine.Compactable).CleanerCheckpoint(); got != res.CleanedTo {
		t.Fatalf("CleanerCheckpoint %d after a round cleaned to %d", got, res.CleanedTo)
	}
	return res
}

// checkGaps fails unless the batches of data, read from offset start,
// have gaps somewhere: before the first or between two (so that the case
// exercised them).
func checkGaps(t *testing.T, start int64, data []byte) {
	t.Helper()
	bs := parseBatches(t, "compacted log", data)
	if len(bs) > 0 && bs[0].base > start {
		return
	}
	for i := 1; i < len(bs); i++ {
		if bs[i].base > bs[i-1].last+1 {
			return
		}
	}
	t.Fatalf("cleaning left no gap between the %d batches", len(bs))
}

// testCompactLatestPerKey: Kafka (LogCleaner): rounds of cleaning over
// many segments keep the latest record of each key below the cleaned
// offset, leave the rest (the active segment above all) as written, never
// move the log's start or end, and merge cleaned segments into fewer; a
// reopen reads back the same bytes.
func testCompactLatestPerKey(t *testing.T, h *harness) {
	l := h.create(compactCfg)
	c := compactable(t, h, l)
	var m keyedModel
	keys := keyNames("key", 50)
	n := 0
	var res cleaner.Result
	for r := 0; r < 3; r++ {
		for i := 0; i < 6; i++ {
			m.round(t, l, n, keys, 5, baseTs+int64(n))
			n++
		}
		if segs := c.InactiveSegments(); len(segs) < 2 {
			t.Fatalf("round %d: %d inactive segments, want several", r, len(segs))
		}
		res = clean(t, h, l, compactCfg)
		data, got := scanGapped(t, l, 0)
		checkRecords(t, fmt.Sprintf("after round %d", r), got, m.expect(0, res.CleanedTo, false))
		checkGaps(t, 0, data)
	}
	if res.Groups >= res.Segments {
		t.Fatalf("last round rewrote %d segments into %d groups: cleaned segments were not merged", res.Segments, res.Groups)
	}
	before, _ := scanGapped(t, l, 0)
	start, end, size := l.StartOffset(), l.EndOffset(), l.Size()
	if size > int64(len(before)) || size <= 0 {
		t.Fatalf("Size %d for %d bytes of batches", size, len(before))
	}
	h.reopen()
	l = h.openID(defaultID, compactCfg)
	after, got := scanGapped(t, l, 0)
	if !bytes.Equal(before, after) || l.StartOffset() != start || l.EndOffset() != end {
		t.Fatalf("after reopen: %d bytes [%d, %d), before %d bytes [%d, %d)", len(after), l.StartOffset(), l.EndOffset(), len(before), start, end)
	}
	checkRecords(t, "after reopen", got, m.expect(0, res.CleanedTo, false))
	// Reads at every offset start at the batch holding it or the next.
	for off := int64(0); off < end; off += 7 {
		mustRead(t, l, off, 1, -1)
	}
}

// testCompactTombstones: Kafka (KIP-534): a tombstone survives the round
// that first cleans it, which stamps its batch with a delete horizon
// delete.retention.ms later; a round after the horizon removes it. The
// values it deleted are gone from the first round on.
func testCompactTombstones(t *testing.T, h *harness) {
	l := h.create(compactCfg)
	var m keyedModel
	keys := keyNames("key", 20)
	for n := 0; n < 3; n++ {
		m.round(t, l, n, keys, 5, baseTs+int64(n))
	}
	for i := 0; i < 10; i += 5 {
		var recs []keyed
		for _, k := range keys[i : i+5] {
			recs = append(recs, keyed{key: k, null: true})
		}
		m.write(t, l, baseTs+10, recs...)
	}
	filler := keyNames("filler", 100)
	m.round(t, l, 0, filler, 5, baseTs+20) // rolls, so the tombstones are inactive
	res := clean(t, h, l, compactCfg)
	_, got := scanGapped(t, l, 0)
	want := m.expect(0, res.CleanedTo, false)
	checkRecords(t, "after the first round", got, want)
	tombstones := 0
	for _, r := range got {
		if r.null {
			tombstones++
		}
	}
	if tombstones != 10 {
		t.Fatalf("%d tombstones after the first round, want 10 (their horizon has not passed)", tombstones)
	}

	// Before the horizon, another round keeps them.
	h.clock.Advance(30 * time.Minute)
	m.round(t, l, 1, filler, 5, baseTs+30)
	res = clean(t, h, l, compactCfg)
	_, got = scanGapped(t, l, 0)
	checkRecords(t, "before the horizon", got, m.expect(0, res.CleanedTo, false))

	h.clock.Advance(time.Hour)
	m.round(t, l, 2, filler, 5, baseTs+40)
	res = clean(t, h, l, compactCfg)
	_, got = scanGapped(t, l, 0)
	checkRecords(t, "after the horizon", got, m.expect(0, res.CleanedTo, true))
	for _, r := range got {
		if r.null {
			t.Fatalf("tombstone %v survived its delete horizon", r)
		}
	}
}

// testCompactThenAppendAndFollow: a compacted log keeps taking leader
// appends and rolling segments, and a follower that appends the cleaned
// log's bytes as they are (AssignOffsets false, gaps and all) holds the
// same log.
func testCompactThenAppendAndFollow(t *testing.T, h *harness) {
	l := h.create(compactCfg)
	c := compactable(t, h, l)
	var m keyedModel
	keys := keyNames("key", 40)
	for n := 0; n < 6; n++ {
		m.round(t, l, n, keys, 4, baseTs+int64(n))
	}
	res := clean(t, h, l, compactCfg)
	inactive := len(c.InactiveSegments())
	for n := 6; n < 12; n++ {
		m.round(t, l, n, keys, 4, baseTs+int64(n))
	}
	if got := len(c.InactiveSegments()); got <= inactive {
		t.Fatalf("%d inactive segments after appending to a compacted log, %d before: no roll", got, inactive)
	}
	_, got := scanGapped(t, l, 0)
	checkRecords(t, "after appending", got, m.expect(0, res.CleanedTo, false))
	res = clean(t, h, l, compactCfg)
	data, got := scanGapped(t, l, 0)
	checkRecords(t, "after a second round", got, m.expect(0, res.CleanedTo, false))
	checkGaps(t, 0, data)

	f := h.createID(engine.PartitionID{Topic: "follower", Partition: 0}, compactCfg)
	// In pieces, as fetches would bring them.
	for pos := 0; pos < len(data); {
		end := pos
		for i := 0; i < 3 && end < len(data); i++ {
			end += record.Batch(data[end:]).Size()
		}
		appendOK(t, f, nil, bytes.Clone(data[pos:end]), engine.AppendOptions{LeaderEpoch: 7})
		pos = end
	}
	fdata, fgot := scanGapped(t, f, 0)
	if !bytes.Equal(fdata, data) || f.EndOffset() != l.EndOffset() {
		t.Fatalf("follower holds %d bytes up to %d, leader %d bytes up to %d", len(fdata), f.EndOffset(), len(data), l.EndOffset())
	}
	checkRecords(t, "follower", fgot, got)
	// The follower reads in gaps as the leader does.
	for off := int64(0); off < l.EndOffset(); off += 5 {
		a, _ := mustRead(t, l, off, 1, -1)
		b, _ := mustRead(t, f, off, 1, -1)
		if !bytes.Equal(a[:record.Batch(a).Size()], b[:record.Batch(b).Size()]) {
			t.Fatalf("Read(%d): leader and follower return different first batches", off)
		}
	}
}

// testCompactTruncateAndDeleteBefore: Truncate at a gap or a batch base of
// a cleaned region, and DeleteBefore into it, keep reads right; an offset
// inside a cleaned batch is still inside a batch for Truncate.
func testCompactTruncateAndDeleteBefore(t *testing.T, h *harness) {
	l := h.create(compactCfg)
	var m keyedModel
	// Key i is written every (i%5+1)th round, so the latest records lie
	// in rounds 5, 8 and 9: cleaning leaves batches that lost records,
	// and drops rounds 6 and 7 whole.
	keys := keyNames("key", 40)
	for n := 0; n < 10; n++ {
		var some []string
		for i, k := range keys {
			if n%(i%5+1) == 0 {
				some = append(some, k)
			}
		}
		m.round(t, l, n, some, 4, baseTs+int64(n))
	}
	res := clean(t, h, l, compactCfg)
	data, _ := scanGapped(t, l, 0)
	bs := parseBatches(t, "compacted log", data)
	var gap int64 = -1 // an offset after a batch and before the next, in the cleaned part
	var inside int64 = -1
	for i := 1; i < len(bs) && bs[i].last < res.CleanedTo; i++ {
		if gap < 0 && bs[i].base > bs[i-1].last+1 && i >= 2 {
			gap = bs[i-1].last + 1
		}
		if inside < 0 && bs[i].last > bs[i].base {
			inside = bs[i].base + 1
		}
	}
	if gap < 0 || inside < 0 {
		t.Fatalf("no gap or multi-offset batch in the cleaned part: %v", bs)
	}
	end := l.EndOffset()
	wantErr(t, fmt.Sprintf("Truncate(%d) inside a cleaned batch", inside), l.Truncate(inside), engine.ErrOffsetOutOfRange)
	if l.EndOffset() != end {
		t.Fatalf("refused Truncate moved the end to %d", l.EndOffset())
	}

	// Truncate in the active part first (at a batch base), then at a gap.
	last := bs[len(bs)-1]
	noErr(t, "Truncate at the last batch", l.Truncate(last.base))
	noErr(t, fmt.Sprintf("Truncate(%d) in a gap", gap), l.Truncate(gap))
	if l.EndOffset() != gap {
		t.Fatalf("EndOffset %d after Truncate(%d)", l.EndOffset(), gap)
	}
	trimmed := func(from, to int64) []keyed {
		var out []keyed
		for _, r := range m.expect(from, res.CleanedTo, false) {
			if r.offset < to {
				out = append(out, r)
			}
		}
		return out
	}
	_, got := scanGapped(t, l, 0)
	checkRecords(t, "after Truncate into a gap", got, trimmed(0, gap))
	if s, err := read(t, l, gap, 1<<20, -1); err != nil || len(s) != 0 {
		t.Fatalf("Read at the new end: %d bytes, %v", len(s), err)
	}
	// Appends continue at the truncation point; from here the model
	// holds exactly what the log should.
	m.recs = trimmed(0, gap)
	m.write(t, l, baseTs+100, keyed{key: "new", value: "after-truncate"})
	if got := m.recs[len(m.recs)-1].offset; got != gap {
		t.Fatalf("append after Truncate(%d) got offset %d", gap, got)
	}

	// DeleteBefore at an offset in the cleaned part, after a batch.
	del := bs[0].last + 1
	noErr(t, fmt.Sprintf("DeleteBefore(%d)", del), l.DeleteBefore(del))
	if l.StartOffset() != del {
		t.Fatalf("StartOffset %d after DeleteBefore(%d)", l.StartOffset(), del)
	}
	_, got = scanGapped(t, l, del)
	checkRecords(t, "after DeleteBefore", got, m.expect(del, 0, false))
	wantErr(t, "Read below the new start", func() error { _, err := read(t, l, del-1, 1, -1); return err }(), engine.ErrOffsetOutOfRange)
}

// testCompactReplaceConflict: a replacement whose segments changed under
// it (here: the log truncated below them and written again to the same
// offsets) fails with engine.ErrCleanConflict at Commit and changes
// nothing; a replacement of unchanged segments commits.
func testCompactReplaceConflict(t *testing.T, h *harness) {
	l := h.create(compactCfg)
	c := compactable(t, h, l)
	var m keyedModel
	keys := keyNames("key", 40)
	for n := 0; n < 8; n++ {
		m.round(t, l, n, keys, 4, baseTs+int64(n))
	}
	segs := c.InactiveSegments()
	if len(segs) < 3 {
		t.Fatalf("%d inactive segments, want at least 3", len(segs))
	}
	seg := segs[1]
	w, err := c.ReplaceSegments(seg.Base, seg.Next)
	noErr(t, "ReplaceSegments", err)
	// The writer gets the segment's batches back, unchanged.
	segData, _ := mustRead(t, l, seg.Base, 1<<20, seg.Next)
	noErr(t, "Write", w.Write(segData))

	// Truncate below from, at the last batch of segment 0, and write
	// the same records again.
	prev, _ := mustRead(t, l, segs[0].Base, 1<<20, segs[0].Next)
	pbs := parseBatches(t, "segment 0", prev)
	cut := pbs[len(pbs)-1].base
	var again [][]byte
	full, _ := scanGapped(t, l, cut)
	for pos := 0; pos < len(full); pos += record.Batch(full[pos:]).Size() {
		again = append(again, bytes.Clone(full[pos:pos+record.Batch(full[pos:]).Size()]))
	}
	noErr(t, "Truncate below the replaced segment", l.Truncate(cut))
	for _, b := range again {
		appendOK(t, l, nil, b, engine.AppendOptions{})
	}
	before, _ := scanGapped(t, l, 0)
	start, end, size := l.StartOffset(), l.EndOffset(), l.Size()

	wantErr(t, "Commit after Truncate", w.Commit(), engine.ErrCleanConflict)
	w.Abort() // after a failed Commit: nothing to do
	after, _ := scanGapped(t, l, 0)
	if !bytes.Equal(before, after) || l.StartOffset() != start || l.EndOffset() != end || l.Size() != size {
		t.Fatalf("a conflicting Commit changed the log")
	}

	// Unchanged segments: the replacement commits, and an aborted one
	// changes nothing.
	segs = c.InactiveSegments()
	seg = segs[1]
	w, err = c.ReplaceSegments(seg.Base, seg.Next)
	noErr(t, "ReplaceSegments", err)
	segData, bs := mustRead(t, l, seg.Base, 1<<20, seg.Next)
	noErr(t, "Write", w.Write(segData[:bs[0].size]))
	w.Abort()
	after, _ = scanGapped(t, l, 0)
	if !bytes.Equal(before, after) || l.Size() != size {
		t.Fatalf("an aborted replacement changed the log")
	}
	w, err = c.ReplaceSegments(seg.Base, seg.Next)
	noErr(t, "ReplaceSegments", err)
	noErr(t, "Write", w.Write(segData[:bs[0].size]))
	noErr(t, "Commit", w.Commit())
	w.Abort() // after Commit: nothing to do
	after, _ = scanGapped(t, l, 0)
	want := append(append(bytes.Clone(before[:bytes.Index(before, segData)]), segData[:bs[0].size]...), before[bytes.Index(before, segData)+len(segData):]...)
	if !bytes.Equal(after, want) || l.Size() != size-int64(len(segData)-bs[0].size) {
		t.Fatalf("after replacing segment [%d, %d) by its first batch: %d bytes (Size %d), want %d", seg.Base, seg.Next, len(after), l.Size(), len(want))
	}
	if l.StartOffset() != start || l.EndOffset() != end {
		t.Fatalf("a replacement moved [start, end)")
	}
	// The replaced range reads in its new gap: a read there starts at
	// the next segment.
	got, _ := mustRead(t, l, bs[0].last+1, 1, -1)
	if b := record.Batch(got); b.BaseOffset() < seg.Next {
		t.Fatalf("Read(%d) in the replaced segment's gap returned the batch at %d, want one at or after %d", bs[0].last+1, b.BaseOffset(), seg.Next)
	}
}

// testCompactCheckpointReopen: the cleaner checkpoint is durable: it
// survives a clean reopen, set by a round or directly.
func testCompactCheckpointReopen(t *testing.T, h *harness) {
	l := h.create(compactCfg)
	c := compactable(t, h, l)
	if got := c.CleanerCheckpoint(); got != 0 {
		t.Fatalf("CleanerCheckpoint of a new log %d, want 0", got)
	}
	var m keyedModel
	keys := keyNames("key", 40)
	for n := 0; n < 6; n++ {
		m.round(t, l, n, keys, 4, baseTs+int64(n))
	}
	res := clean(t, h, l, compactCfg)
	h.reopen()
	l = h.openID(defaultID, compactCfg)
	c = compactable(t, h, l)
	if got := c.CleanerCheckpoint(); got != res.CleanedTo {
		t.Fatalf("CleanerCheckpoint %d after reopen, want %d", got, res.CleanedTo)
	}
	// A round with nothing new to clean does nothing.
	cl, _ := cleaner.New(1<<20, nil)
	r2, err := cl.Clean(cleaner.Target{ID: defaultID, Log: l, Config: compactCfg.WithDefaults(), Bound: -1}, h.clock.Now())
	noErr(t, "Clean with nothing dirty", err)
	if r2.CleanedTo != res.CleanedTo || r2.Groups != 0 {
		t.Fatalf("a round after reopen with nothing dirty: %+v", r2)
	}
	noErr(t, "SetCleanerCheckpoint", c.SetCleanerCheckpoint(res.CleanedTo-3))
	h.reopen()
	l = h.openID(defaultID, compactCfg)
	if got := compactable(t, h, l).CleanerCheckpoint(); got != res.CleanedTo-3 {
		t.Fatalf("CleanerCheckpoint %d after reopen, want %d", got, res.CleanedTo-3)
	}
	_, got := scanGapped(t, l, 0)
	checkRecords(t, "after reopens", got, m.expect(0, res.CleanedTo, false))
}

// emptyBatch is a batch that holds no record, found in a log.
type emptyBatch struct {
	producerID int64
	base, last int64
}

// emptyBatches lists the batches of data that hold no record.
func emptyBatches(data []byte) []emptyBatch {
	var out []emptyBatch
	for pos := 0; pos < len(data); {
		b := record.Batch(data[pos:])
		if b.RecordCount() == 0 {
			out = append(out, emptyBatch{b.ProducerID(), b.BaseOffset(), b.LastOffset()})
		}
		pos += b.Size()
	}
	return out
}

// testCompactProducerEmptyBatches: Kafka (Cleaner.cleanInto,
// isBatchLastRecordOfProducer and upperBoundOffsetOfCleaningRound): a
// batch whose records are all gone stays, as an empty batch, only when it
// is an active producer's last data batch or the last batch of the round;
// the batches that ended the other segments (groups) of the round go, and
// a producer's retained empty batch goes once a later batch of that
// producer exists. Before, every rewritten group kept its last batch, and
// the log filled with one-empty-batch segments that consumers stall on.
func testCompactProducerEmptyBatches(t *testing.T, h *harness) {
	l := h.create(compactCfg)
	c := compactable(t, h, l)
	var m keyedModel
	keys := keyNames("key", 40)
	p := &idempotent{id: 7}
	last := map[int64]int64{} // producer id -> last offset of its last batch
	round := func(n int) {
		for i := 0; i < len(keys); i += 4 {
			var recs []keyed
			for _, k := range keys[i : i+4] {
				recs = append(recs, keyed{key: k, value: fmt.Sprintf("r%d-%s", n, k)})
			}
			info := m.writeAs(t, l, p, baseTs+int64(n), recs...)
			last[p.id] = info.LastOffset
		}
	}
	// Producer 7 writes two rounds, then producer 8 rewrites every key
	// for four rounds: all of producer 7's records are superseded.
	round(0)
	round(1)
	p7last := last[7]
	p = &idempotent{id: 8}
	for n := 2; n < 6; n++ {
		round(n)
	}
	// Only producer 7 is asked about: producer 8's last batch is in the
	// active segment, never cleaned.
	producerLast := func(pid int64) (int64, bool) {
		o, ok := last[pid]
		return o, ok && pid == 7
	}
	cleanWith := func(what string) cleaner.Result {
		t.Helper()
		cl, err := cleaner.New(1<<20, nil)
		noErr(t, "cleaner.New", err)
		segs := c.InactiveSegments()
		res, err := cl.Clean(cleaner.Target{ID: defaultID, Log: l, Config: compactCfg.WithDefaults(), Bound: -1,
			ProducerLast: producerLast}, h.clock.Now())
		noErr(t, what, err)
		if res.Groups < 2 {
			t.Fatalf("%s: %d groups over %d segments: the case needs several", what, res.Groups, len(segs))
		}
		return res
	}
	res := cleanWith("first Clean")
	data, got := scanGapped(t, l, 0)
	checkRecords(t, "after the first round", got, m.expect(0, res.CleanedTo, false))
	// Kept empty: producer 7's last batch, and the round's last batch if
	// it was emptied (the one ending where the round stopped).
	for _, e := range emptyBatches(data) {
		if !(e.producerID == 7 && e.last == p7last) && e.last+1 != res.Progress.FirstUncleanable {
			t.Fatalf("after the first round: empty batch [%d, %d] of producer %d kept; only producer 7's last batch (ending at %d) "+
				"and the round's last (ending at %d) may be", e.base, e.last, e.producerID, p7last, res.Progress.FirstUncleanable-1)
		}
	}
	if es := emptyBatches(data); len(es) == 0 || es[0].producerID != 7 || es[0].last != p7last {
		t.Fatalf("after the first round: empty batches %+v, want producer 7's last batch, ending at %d, kept", es, p7last)
	}

	// Producer 7 writes again: its old last batch is no longer its last,
	// and the next round drops it.
	p = &idempotent{id: 7, seq: p.seq}
	round(6)
	p = &idempotent{id: 8}
	for n := 7; n < 10; n++ {
		round(n)
	}
	res = cleanWith("second Clean")
	data, got = scanGapped(t, l, 0)
	checkRecords(t, "after the second round", got, m.expect(0, res.CleanedTo, false))
	for _, e := range emptyBatches(data) {
		if e.last == p7last {
			t.Fatalf("after the second round: producer 7's old last batch [%d, %d] is still there, empty, after it wrote more", e.base, e.last)
		}
		if !(e.producerID == 7 && e.last == last[7]) && e.last+1 != res.Progress.FirstUncleanable {
			t.Fatalf("after the second round: empty batch [%d, %d] of producer %d kept", e.base, e.last, e.producerID)
		}
	}
	h.reopen()
	l = h.openID(defaultID, compactCfg)
	after, _ := scanGapped(t, l, 0)
	if !bytes.Equal(after, data) {
		t.Fatalf("after reopen: %d bytes, before %d", len(after), len(data))
	}
}

// testCompactMergesSmallSegments: Kafka (groupSegmentsBySize): a round
// rewrites the segments from the log start into groups of consecutive
// segments whose sizes add up to at most segment.bytes, one segment per
// group, so the small segments earlier rounds left are merged. The
// expected groups are computed from InactiveSegments before the round.
func testCompactMergesSmallSegments(t *testing.T, h *harness) {
	l := h.create(compactCfg)
	c := compactable(t, h, l)
	var m keyedModel
	keys := keyNames("key", 50)
	n := 0
	for r := 0; r < 3; r++ {
		for i := 0; i < 8; i++ {
			m.round(t, l, n, keys, 5, baseTs+int64(n))
			n++
		}
		before := c.InactiveSegments()
		res := clean(t, h, l, compactCfg)
		var want []int64 // the groups' bases, below the round's end
		var size int64
		for i, s := range before {
			if s.Base >= res.CleanedTo {
				break
			}
			if i == 0 || size+s.Bytes > compactCfg.SegmentBytes {
				want = append(want, s.Base)
				size = 0
			}
			size += s.Bytes
		}
		var got []int64
		for _, s := range c.InactiveSegments() {
			if s.Base < res.CleanedTo {
				got = append(got, s.Base)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("round %d: segments at %v after cleaning, want one per group of at most %d bytes at %v (segments before: %+v)",
				r, got, compactCfg.SegmentBytes, want, before)
		}
		if r > 0 && len(want) >= len(before) {
			t.Fatalf("round %d: %d groups of %d segments: nothing merged", r, len(want), len(before))
		}
		_, recs := scanGapped(t, l, 0)
		checkRecords(t, fmt.Sprintf("after round %d", r), recs, m.expect(0, res.CleanedTo, false))
	}
}
