package replication

import (
	"bytes"
	"cmp"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice/sluice/engine"
	_ "github.com/sluice/sluice/engine/pebblelog" // the "pebble" backend
)

// The test wrappers of engine.Log forward the snapshot store.
func (c *countingLog) SaveSnapshot(off int64, data []byte) error {
	return c.Log.(engine.SnapshotStore).SaveSnapshot(off, data)
}
func (c *countingLog) LatestSnapshot(upTo int64) (int64, []byte, bool, error) {
	return c.Log.(engine.SnapshotStore).LatestSnapshot(upTo)
}
func (c *countingLog) DeleteSnapshotsFrom(off int64) error {
	return c.Log.(engine.SnapshotStore).DeleteSnapshotsFrom(off)
}
func (c *countingLog) DeleteSnapshotsBefore(off int64) error {
	return c.Log.(engine.SnapshotStore).DeleteSnapshotsBefore(off)
}
func (c *countingLog) SnapshotDue() int64 { return c.Log.(engine.SnapshotStore).SnapshotDue() }

func (l *truncLog) SaveSnapshot(off int64, data []byte) error {
	return l.Log.(engine.SnapshotStore).SaveSnapshot(off, data)
}
func (l *truncLog) LatestSnapshot(upTo int64) (int64, []byte, bool, error) {
	return l.Log.(engine.SnapshotStore).LatestSnapshot(upTo)
}
func (l *truncLog) DeleteSnapshotsFrom(off int64) error {
	return l.Log.(engine.SnapshotStore).DeleteSnapshotsFrom(off)
}
func (l *truncLog) DeleteSnapshotsBefore(off int64) error {
	return l.Log.(engine.SnapshotStore).DeleteSnapshotsBefore(off)
}
func (l *truncLog) SnapshotDue() int64 { return l.Log.(engine.SnapshotStore).SnapshotDue() }

// TestSnapshotRoundTrip: every field of an entry survives encode and
// decode (a producer known from markers only, an open transaction, a
// sequence range wrapping past MaxInt32), entries come out by producer id,
// and the bytes are Kafka's layout (version 1, CRC-32C, 46-byte entries).
func TestSnapshotRoundTrip(t *testing.T) {
	s := newProducerState(0)
	s.put(7, &producerEntry{epoch: 3, lastMs: 1234, coordEpoch: 5, txnFirst: 40, inTxn: true})
	s.producers[7].push(batchMeta{firstSeq: 10, lastSeq: 14, firstOffset: 40, lastOffset: 44})
	s.put(2, &producerEntry{epoch: 1, lastMs: 99, coordEpoch: -1})
	s.producers[2].push(batchMeta{firstSeq: 0, lastSeq: 0, firstOffset: 1, lastOffset: 1})
	s.producers[2].push(batchMeta{firstSeq: math.MaxInt32 - 1, lastSeq: 1, firstOffset: 2, lastOffset: 5})
	s.put(9, &producerEntry{epoch: 8, lastMs: 7, coordEpoch: 2}) // markers only

	b := encodeSnapshot(s)
	if len(b) != snapshotHeader+3*snapshotEntrySize || b[0] != 0 || b[1] != 1 {
		t.Fatalf("encoded %d bytes starting %x", len(b), b[:2])
	}
	entries, err := decodeSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	want := []snapshotEntry{
		{pid: 2, epoch: 1, lastSeq: 1, lastOffset: 5, delta: 3, lastMs: 99, coordEpoch: -1, txnFirst: -1},
		{pid: 7, epoch: 3, lastSeq: 14, lastOffset: 44, delta: 4, lastMs: 1234, coordEpoch: 5, txnFirst: 40},
		{pid: 9, epoch: 8, lastSeq: -1, lastOffset: -1, delta: 0, lastMs: 7, coordEpoch: 2, txnFirst: -1},
	}
	if !slices.Equal(entries, want) {
		t.Fatalf("decoded %+v\nwant    %+v", entries, want)
	}
	s2 := newProducerState(0)
	loadSnapshot(s2, entries)
	if m, _ := s2.producers[2].last(); m != (batchMeta{firstSeq: math.MaxInt32 - 1, lastSeq: 1, firstOffset: 2, lastOffset: 5}) {
		t.Fatalf("producer 2's last batch after load: %+v", m)
	}
	if e := s2.producers[7]; !e.inTxn || e.txnFirst != 40 || e.coordEpoch != 5 {
		t.Fatalf("producer 7 after load: %+v", e)
	}
	if e := s2.producers[9]; e.n != 0 || e.epoch != 8 {
		t.Fatalf("producer 9 after load: %+v", e)
	}
	if len(s2.events) != 1 || s2.events[0] != (txnEvent{pid: 7, first: 40, marker: -1}) {
		t.Fatalf("events after load: %+v", s2.events)
	}
	if !bytes.Equal(encodeSnapshot(s2), b) {
		t.Fatalf("re-encoding the loaded state differs")
	}

	for name, bad := range map[string][]byte{
		"empty":    nil,
		"torn":     b[:len(b)-3],
		"bit flip": flip(b, snapshotHeader+20),
		"version":  flip(b, 1),
		"crc":      flip(b, 3),
	} {
		if _, err := decodeSnapshot(bad); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0x40
	return c
}

// FuzzDecodeSnapshot checks the snapshot decoder on arbitrary bytes: it
// never panics; what it accepts has exactly the length its count says;
// re-encoding what it accepted, loaded as producer state, decodes to the
// same entries (except entries repeated for one producer id, which a
// table cannot hold twice), and the entries' offsets are consistent
// (last offset >= offset delta >= 0 for producers with a batch).
func FuzzDecodeSnapshot(f *testing.F) {
	s := newProducerState(0)
	s.put(7, &producerEntry{epoch: 3, lastMs: 1234, coordEpoch: 5, txnFirst: 40, inTxn: true})
	s.producers[7].push(batchMeta{firstSeq: 10, lastSeq: 14, firstOffset: 40, lastOffset: 44})
	s.put(9, &producerEntry{epoch: 8, coordEpoch: -1})
	f.Add(encodeSnapshot(s))
	f.Add(encodeSnapshot(newProducerState(0)))
	f.Add([]byte{0, 1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := decodeSnapshot(b)
		if err != nil {
			return
		}
		if len(b) != snapshotHeader+len(entries)*snapshotEntrySize {
			t.Fatalf("accepted %d bytes holding %d entries", len(b), len(entries))
		}
		pids := map[int64]bool{}
		for _, e := range entries {
			if e.lastOffset >= 0 && (e.delta < 0 || e.lastOffset < int64(e.delta)) {
				t.Fatalf("accepted inconsistent entry %+v", e)
			}
			if pids[e.pid] {
				return
			}
			pids[e.pid] = true
		}
		s := newProducerState(0)
		loadSnapshot(s, entries)
		again, err := decodeSnapshot(encodeSnapshot(s))
		if err != nil {
			t.Fatalf("re-encoded snapshot does not decode: %v", err)
		}
		norm := slices.Clone(entries)
		for i := range norm {
			if norm[i].lastOffset < 0 {
				// No batch: Kafka's reader drops the sequence and delta too.
				norm[i].lastOffset, norm[i].lastSeq, norm[i].delta = -1, -1, 0
			}
			if norm[i].txnFirst < 0 {
				norm[i].txnFirst = -1
			}
		}
		slices.SortFunc(norm, func(a, b snapshotEntry) int { return cmp.Compare(a.pid, b.pid) })
		if !slices.Equal(again, norm) {
			t.Fatalf("re-decoded %+v\nwant       %+v", again, norm)
		}
	})
}

// snapshotBackends are the backends of the restart tests: the replication
// tests' own and pebble.
var snapshotBackends = []string{"memory", "segment", "pebble"}

// oldStateScenario appends, into a log that rolls every 4 KiB, a batch of
// idempotent producer 1, a transaction of producer 2 left open at its
// first offset, then unrelated traffic far beyond a 2 KiB scan window. It
// returns producer 1's batch and its result, and the transaction's first
// offset.
func oldStateScenario(t *testing.T, p *Partition) (b1 []byte, r1 AppendResult, txnFirst int64) {
	t.Helper()
	mustAppend(t, p, batch(-1, 0, -1, 3))
	b1 = batch(1, 0, 0, 2)
	r1 = mustAppend(t, p, bytes.Clone(b1))
	txnFirst = mustAppend(t, p, txnBatch(2, 0, 0, 2)).BaseOffset
	for i := 0; i < 300; i++ {
		mustAppend(t, p, batch(-1, 0, -1, 5))
	}
	wantLSO(t, p, txnFirst)
	return b1, r1, txnFirst
}

const (
	snapSegmentBytes = 4096
	snapScanBytes    = 2048
)

// reopenPartition closes p and opens a partition over the reopened log,
// after damage (when not nil) did what it does to the log.
func reopenPartition(t *testing.T, st engine.Store, p *Partition, damage func(engine.Log)) *Partition {
	t.Helper()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := st.OpenLog(testID, engine.LogConfig{SegmentBytes: snapSegmentBytes})
	if err != nil {
		t.Fatal(err)
	}
	if damage != nil {
		damage(l)
	}
	p2, err := NewPartition(l, Options{Topic: "t", ProducerScanBytes: snapScanBytes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p2.Close() })
	return p2
}

// dropLatestSnapshot deletes l's latest snapshot: what a crash leaves
// (the snapshots of the rolls, none at the log end).
func dropLatestSnapshot(t *testing.T, l engine.Log) {
	t.Helper()
	ss := l.(engine.SnapshotStore)
	off, _, ok, err := ss.LatestSnapshot(math.MaxInt64)
	if err != nil || !ok {
		t.Fatalf("LatestSnapshot: %d %v %v", off, ok, err)
	}
	if off != l.EndOffset() {
		t.Fatalf("latest snapshot at %d, log end %d: none written at shutdown", off, l.EndOffset())
	}
	if err := ss.DeleteSnapshotsFrom(off); err != nil {
		t.Fatal(err)
	}
}

// wantOldState checks that producer 1's retry is a duplicate and that the
// transaction still holds the LSO.
func wantOldState(t *testing.T, p *Partition, b1 []byte, r1 AppendResult, txnFirst int64) {
	t.Helper()
	wantLSO(t, p, txnFirst)
	res := mustAppend(t, p, bytes.Clone(b1))
	if !res.Duplicate || res.BaseOffset != r1.BaseOffset || res.LastOffset != r1.LastOffset {
		t.Fatalf("retry of producer 1's batch: %+v, want a duplicate of %+v", res, r1)
	}
	if _, err := p.Append(ctx, batch(1, 0, 5, 1), -1); err == nil {
		t.Fatalf("producer 1 at a gap in its sequence accepted: its state was lost")
	}
	off := mustMarker(t, p, TxnMarker{ProducerID: 2, ProducerEpoch: 0, Commit: true})
	wantLSO(t, p, off+1)
}

// TestSnapshotRestartKeepsOldState: a producer and a transaction older
// than the scan window survive a restart through the snapshots, after a
// clean shutdown (the snapshot at the log end) and as after a crash (the
// snapshot of the last roll, then the log after it), and only the last
// few snapshots are kept.
func TestSnapshotRestartKeepsOldState(t *testing.T) {
	for _, backend := range snapshotBackends {
		for _, crash := range []bool{false, true} {
			name := backend + "/clean"
			if crash {
				name = backend + "/crash"
			}
			t.Run(name, func(t *testing.T) {
				st, dir := openStoreDir(t, backend)
				p, _ := newPartition(t, st, engine.LogConfig{SegmentBytes: snapSegmentBytes}, Options{Topic: "t", ProducerScanBytes: snapScanBytes})
				b1, r1, txnFirst := oldStateScenario(t, p)
				var damage func(engine.Log)
				if crash {
					damage = func(l engine.Log) { dropLatestSnapshot(t, l) }
				}
				p2 := reopenPartition(t, st, p, damage)
				wantOldState(t, p2, b1, r1, txnFirst)
				if backend == "segment" {
					snaps := snapshotFiles(t, dir)
					if len(snaps) == 0 || len(snaps) > keepSnapshots {
						t.Fatalf("snapshot files %v", snaps)
					}
				}
			})
		}
	}
}

// TestSnapshotWithoutSnapshotsScansWholeLog: with the snapshots gone,
// the rebuild reads the whole log and still finds the old producer and
// the old transaction.
func TestSnapshotWithoutSnapshotsScansWholeLog(t *testing.T) {
	st := openStore(t, "segment")
	p, _ := newPartition(t, st, engine.LogConfig{SegmentBytes: snapSegmentBytes}, Options{Topic: "t", ProducerScanBytes: snapScanBytes})
	b1, r1, txnFirst := oldStateScenario(t, p)
	p2 := reopenPartition(t, st, p, func(l engine.Log) {
		if err := l.(engine.SnapshotStore).DeleteSnapshotsFrom(0); err != nil {
			t.Fatal(err)
		}
	})
	wantOldState(t, p2, b1, r1, txnFirst)
}

// TestSnapshotDamagedFallsBack: a damaged latest snapshot (a bit flipped,
// a torn file) is skipped with a warning and the next older one loaded,
// then the log replayed from it; the state is the same.
func TestSnapshotDamagedFallsBack(t *testing.T) {
	for name, damage := range map[string]func([]byte) []byte{
		"bit flip": func(b []byte) []byte { return flip(b, len(b)-1) },
		"torn":     func(b []byte) []byte { return b[:len(b)/2] },
		"empty":    func([]byte) []byte { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			st, dir := openStoreDir(t, "segment")
			p, _ := newPartition(t, st, engine.LogConfig{SegmentBytes: snapSegmentBytes}, Options{Topic: "t", ProducerScanBytes: snapScanBytes})
			b1, r1, txnFirst := oldStateScenario(t, p)
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			snaps := snapshotFiles(t, dir)
			if len(snaps) < 2 {
				t.Fatalf("snapshot files %v", snaps)
			}
			latest := snaps[len(snaps)-1]
			data, err := os.ReadFile(latest)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(latest, damage(data), 0o644); err != nil {
				t.Fatal(err)
			}
			p2 := reopenPartition(t, st, p, nil)
			wantOldState(t, p2, b1, r1, txnFirst)
		})
	}
}

// TestSnapshotTruncation: a follower's truncation deletes the snapshots
// above the new log end and reloads the state from one below it.
func TestSnapshotTruncation(t *testing.T) {
	st := openStore(t, "segment")
	p, cl := newPartition(t, st, engine.LogConfig{SegmentBytes: snapSegmentBytes}, Options{Topic: "t", ProducerScanBytes: snapScanBytes})
	b1, r1, txnFirst := oldStateScenario(t, p)
	ss := cl.Log.(engine.SnapshotStore)
	last, _, ok, err := ss.LatestSnapshot(math.MaxInt64)
	if err != nil || !ok {
		t.Fatalf("no snapshot: %v", err)
	}
	if err := p.MakeFollower(LeaderAndIsr{Leader: 2, LeaderEpoch: 1, ISR: []int32{0, 2}, Replicas: []int32{0, 2}}); err != nil {
		t.Fatal(err)
	}
	if err := p.TruncateTo(last - 1); err != nil {
		t.Fatal(err)
	}
	if off, _, ok, _ := ss.LatestSnapshot(math.MaxInt64); !ok || off >= last || off > p.LogEndOffset() {
		t.Fatalf("after truncating to %d: latest snapshot %d (%v), was %d", p.LogEndOffset(), off, ok, last)
	}
	if err := p.MakeLeader(LeaderAndIsr{Leader: 0, LeaderEpoch: 2, ISR: []int32{0}, Replicas: []int32{0}}); err != nil {
		t.Fatal(err)
	}
	wantOldState(t, p, b1, r1, txnFirst)
}

// openStoreDir is openStore that also returns the test log's directory
// (for the segment backend).
func openStoreDir(t *testing.T, backend string) (engine.Store, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := engine.Open(backend, engine.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, filepath.Join(dir, testID.Topic+"-0")
}

// snapshotFiles lists the .snapshot files in dir, by offset.
func snapshotFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".snapshot") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	slices.Sort(out)
	return out
}

// TestSnapshotNoneForEmptyLog: closing a partition whose log is empty
// saves no snapshot (a restart would replay nothing without one; a clean
// stop of 20,000 new partitions wrote 20,000), and one with data does.
func TestSnapshotNoneForEmptyLog(t *testing.T) {
	for _, backend := range snapshotBackends {
		t.Run("backend="+backend, func(t *testing.T) {
			st := openStore(t, backend)
			p, _ := newPartition(t, st, engine.LogConfig{SegmentBytes: snapSegmentBytes}, Options{Topic: "t"})
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			l, err := st.OpenLog(testID, engine.LogConfig{SegmentBytes: snapSegmentBytes})
			if err != nil {
				t.Fatal(err)
			}
			ss := l.(engine.SnapshotStore)
			if off, _, ok, err := ss.LatestSnapshot(math.MaxInt64); err != nil || ok {
				t.Fatalf("empty log closed: snapshot at %d (%v, %v), want none", off, ok, err)
			}
			p2, err := NewPartition(l, Options{Topic: "t"})
			if err != nil {
				t.Fatal(err)
			}
			mustAppend(t, p2, batch(1, 0, 0, 2))
			if err := p2.Close(); err != nil {
				t.Fatal(err)
			}
			l, err = st.OpenLog(testID, engine.LogConfig{SegmentBytes: snapSegmentBytes})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			if off, _, ok, err := l.(engine.SnapshotStore).LatestSnapshot(math.MaxInt64); err != nil || !ok || off != l.EndOffset() {
				t.Fatalf("log with data closed: snapshot at %d (%v, %v), want one at the end %d", off, ok, err, l.EndOffset())
			}
		})
	}
}

// TestSnapshotNoneAtFirstAppend: the first append to a new log creates
// its first segment, which is not a roll: no snapshot is written in the
// produce path (one per new partition, 10,000 for a new topic of 10,000
// partitions); the roll that follows still snapshots.
func TestSnapshotNoneAtFirstAppend(t *testing.T) {
	for _, backend := range snapshotBackends {
		t.Run("backend="+backend, func(t *testing.T) {
			st := openStore(t, backend)
			p, cl := newPartition(t, st, engine.LogConfig{SegmentBytes: snapSegmentBytes}, Options{Topic: "t"})
			ss := cl.Log.(engine.SnapshotStore)
			mustAppend(t, p, batch(1, 0, 0, 2))
			if off, _, ok, err := ss.LatestSnapshot(math.MaxInt64); err != nil || ok {
				t.Fatalf("after the first append: snapshot at %d (%v, %v), want none", off, ok, err)
			}
			for i := 0; ss.SnapshotDue() <= 0 && i < 2_000; i++ {
				mustAppend(t, p, batch(1, 0, int32(2+2*i), 2))
			}
			if ss.SnapshotDue() <= 0 {
				return // a backend without rolls at this size
			}
			if _, _, ok, err := ss.LatestSnapshot(math.MaxInt64); err != nil || !ok {
				t.Fatalf("after a roll: no snapshot (%v, %v)", ok, err)
			}
		})
	}
}
