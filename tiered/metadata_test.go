package tiered

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/metastore"
)

// memCheckpoints is an in-memory checkpoints store.
type memCheckpoints map[string][]byte

func (m memCheckpoints) PutCheckpoint(name string, v []byte) error {
	m[name] = append([]byte{}, v...)
	return nil
}

func (m memCheckpoints) GetCheckpoint(name string) ([]byte, error) {
	v, ok := m[name]
	if !ok {
		return nil, metastore.ErrNotFound
	}
	return append([]byte{}, v...), nil
}

var testTP = TopicIDPartition{TopicID: UUID{1, 2, 3}, Topic: "t", Partition: 3}

func testSegment(start, end int64) SegmentMetadata {
	return SegmentMetadata{
		Partition: testTP, SegmentID: newUUID(), StartOffset: start, EndOffset: end,
		MaxTimestamp: 1000 + end, EventTimestamp: 5, BrokerID: 0, SizeInBytes: 4096,
		LeaderEpochs: []engine.EpochEntry{{Epoch: 0, StartOffset: start}, {Epoch: 2, StartOffset: start + 1}},
		State:        CopySegmentStarted,
	}
}

func TestMetadataRoundTrip(t *testing.T) {
	segs := []SegmentMetadata{testSegment(0, 9), testSegment(10, 19)}
	segs[1].State, segs[1].TxnIndexEmpty, segs[1].LeaderEpochs = CopySegmentFinished, true, nil
	tp, got, err := decodePartition(encodePartition(nil, testTP, segs))
	if err != nil {
		t.Fatal(err)
	}
	if tp != testTP || !reflect.DeepEqual(got, segs) {
		t.Fatalf("decoded %v %+v, want %v %+v", tp, got, testTP, segs)
	}
}

// TestMetadataTransitions: Kafka's state machine; a finished deletion
// drops the record; an invalid transition changes nothing; the store
// reads back what it wrote.
func TestMetadataTransitions(t *testing.T) {
	kv := memCheckpoints{}
	s := newMetadataStore(kv)
	a := testSegment(0, 9)
	if err := s.Add(a); err != nil {
		t.Fatal(err)
	}
	finished := a
	finished.State = CopySegmentFinished
	if err := s.Add(finished); err == nil {
		t.Fatal("a segment added finished")
	}
	steps := []struct {
		to State
		ok bool
	}{
		{DeleteSegmentFinished, false},
		{CopySegmentFinished, true},
		{CopySegmentStarted, false},
		{DeleteSegmentStarted, true},
		{CopySegmentFinished, false},
		{DeleteSegmentFinished, true},
	}
	for _, st := range steps {
		err := s.Update(testTP, a.SegmentID, st.to, 7)
		if (err == nil) != st.ok {
			t.Fatalf("to %s: %v, want ok=%v", st.to, err, st.ok)
		}
	}
	if segs, err := newMetadataStore(kv).Segments(testTP); err != nil || len(segs) != 0 {
		t.Fatalf("after deletion: %v, %v", segs, err)
	}
	parts, err := newMetadataStore(kv).Partitions()
	if err != nil || len(parts) != 1 || parts[0] != testTP {
		t.Fatalf("index %v, %v", parts, err)
	}
	if err := s.Forget(testTP); err != nil {
		t.Fatal(err)
	}
	if parts, err := newMetadataStore(kv).Partitions(); err != nil || len(parts) != 0 {
		t.Fatalf("index after forget %v, %v", parts, err)
	}
}

// TestMetadataCorruptEveryByte: flipping any byte of a stored value gives
// ErrCorruptMetadata or a value naming other data, never a panic; the
// store keeps answering the error.
func TestMetadataCorruptEveryByte(t *testing.T) {
	v := encodePartition(nil, testTP, []SegmentMetadata{testSegment(0, 9), testSegment(10, 19)})
	for i := range v {
		b := bytes.Clone(v)
		b[i] ^= 0x5a
		tp, _, err := decodePartition(b)
		if err == nil && tp == testTP {
			t.Fatalf("byte %d flipped: decoded without error", i)
		}
		if err != nil && !errors.Is(err, ErrCorruptMetadata) {
			t.Fatalf("byte %d: %v", i, err)
		}
		s := newMetadataStore(memCheckpoints{partitionKey(testTP): b})
		if _, err := s.Segments(testTP); err == nil {
			t.Fatalf("byte %d flipped: the store trusted it", i)
		}
	}
}

// FuzzDecodePartition checks the metadata decoder: it never panics; what
// it accepts re-encodes to the same bytes (the format has one encoding).
func FuzzDecodePartition(f *testing.F) {
	f.Add(encodePartition(nil, testTP, nil))
	f.Add(encodePartition(nil, testTP, []SegmentMetadata{testSegment(0, 9), testSegment(10, 19)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		tp, segs, err := decodePartition(b)
		if err != nil {
			return
		}
		if got := encodePartition(nil, tp, segs); !bytes.Equal(got, b) {
			t.Fatalf("re-encoding differs:\n%x\n%x", got, b)
		}
	})
}

// FuzzDecodeIndex: the partition index decoder never panics.
func FuzzDecodeIndex(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0, 0, 0, 1, 0, 1, 't'})
	f.Fuzz(func(t *testing.T, b []byte) { decodeIndex(b) })
}

// TestLocalDirCopyFetchDelete: the local-directory backend writes every
// object under its documented name, reads the log from a position, and
// deletes every object of a segment, temporary ones too.
func TestLocalDirCopyFetchDelete(t *testing.T) {
	dir := t.TempDir()
	src := t.TempDir()
	write := func(name, v string) string {
		p := filepath.Join(src, name)
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ld, err := NewLocalDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	md := testSegment(100, 199)
	data := LogSegmentData{
		Log: write("log", "0123456789trailing"), LogBytes: 10,
		OffsetIndex: write("index", "idx"), TimeIndex: write("timeindex", "tix"),
		ProducerSnapshot: write("snapshot", "snap"), LeaderEpochs: []byte("0\n1\n0 100\n"),
	}
	if err := ld.CopyLogSegmentData(md, data); err != nil {
		t.Fatal(err)
	}
	pdir := filepath.Join(dir, "t-"+testTP.TopicID.String(), "3")
	entries, _ := os.ReadDir(pdir)
	if len(entries) != 5 {
		t.Fatalf("%d objects, want 5 (log, index, timeindex, snapshot, leader_epoch_checkpoint)", len(entries))
	}
	rc, err := ld.FetchLogSegment(md, 4)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 32)
	n, _ := rc.Read(b)
	rc.Close()
	if string(b[:n]) != "456789" {
		t.Fatalf("log from 4: %q", b[:n])
	}
	if _, err := ld.FetchIndex(md, IndexTransaction); !errors.Is(err, ErrRemoteNotFound) {
		t.Fatalf("missing txn index: %v", err)
	}
	os.WriteFile(filepath.Join(pdir, objectPrefix(md)+"log.tmp"), nil, 0o644)
	if err := ld.DeleteLogSegmentData(md); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(pdir)); !os.IsNotExist(err) {
		t.Fatalf("topic dir left: %v", err)
	}
	if err := ld.DeleteLogSegmentData(md); err != nil {
		t.Fatalf("deleting again: %v", err)
	}
}

func TestSegmentEpochs(t *testing.T) {
	e := []engine.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 50}, {Epoch: 3, StartOffset: 120}, {Epoch: 4, StartOffset: 300}}
	got := segmentEpochs(e, 100, 200)
	want := []engine.EpochEntry{{Epoch: 1, StartOffset: 100}, {Epoch: 3, StartOffset: 120}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%v, want %v", got, want)
	}
	if s := string(epochCheckpoint(e, 200)); s != "0\n3\n0 0\n1 50\n3 120\n" {
		t.Fatalf("checkpoint %q", s)
	}
}
