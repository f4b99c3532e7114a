package tiered

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/internal/topicname"
)

func rlmSamples() []MetadataRecord {
	seg := testSegment(100, 199)
	seg.TxnIndexEmpty = true
	upd := MetadataRecord{Kind: MetadataUpdateKey, Segment: SegmentMetadata{Partition: testTP, SegmentID: seg.SegmentID, BrokerID: 2, EventTimestamp: 77, State: CopySegmentFinished}}
	snap := seg
	snap.Partition = TopicIDPartition{}
	snap.LeaderEpochs, snap.TxnIndexEmpty = nil, false
	return []MetadataRecord{
		{Kind: MetadataSegmentKey, Segment: seg},
		upd,
		{Kind: MetadataDeleteKey, Delete: PartitionDelete{Partition: testTP, BrokerID: 1, EventTimestamp: 9, State: DeletePartitionStarted}},
		{Kind: MetadataSnapshotKey, Segment: snap},
	}
}

// TestRLMRecordRoundTrip: each of Kafka's four record types decodes to
// what was encoded, behind the frame version 1, apiKey, version 0 header.
func TestRLMRecordRoundTrip(t *testing.T) {
	for _, rec := range rlmSamples() {
		t.Run(reflect.ValueOf(rec.Kind).String(), func(t *testing.T) {
			b := appendRLMRecord(nil, &rec)
			if b[0] != 1 || int16(b[1]) != rec.Kind || b[2] != 0 {
				t.Fatalf("header % x, want 01 %02x 00", b[:3], rec.Kind)
			}
			got, err := decodeRLMRecord(b)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Segment.LeaderEpochs == nil && rec.Kind != MetadataUpdateKey && rec.Kind != MetadataDeleteKey {
				rec.Segment.LeaderEpochs = []engine.EpochEntry{}
			}
			if !reflect.DeepEqual(got, rec) {
				t.Fatalf("decoded %+v\nwant    %+v", got, rec)
			}
		})
	}
}

// TestRLMRecordLayout pins the bytes of an update record field by field
// (Kafka's RemoteLogSegmentMetadataUpdateRecord v0, flexible).
func TestRLMRecordLayout(t *testing.T) {
	tp := TopicIDPartition{TopicID: UUID{15: 1}, Topic: "ab", Partition: 5}
	rec := MetadataRecord{Kind: MetadataUpdateKey, Segment: SegmentMetadata{Partition: tp, SegmentID: UUID{0: 2}, BrokerID: 3, EventTimestamp: 4, State: DeleteSegmentStarted}}
	var want []byte
	want = append(want, 1, 1, 0)     // frame version, apiKey, version
	want = append(want, 3, 'a', 'b') // compact string "ab"
	want = append(want, tp.TopicID[:]...)
	want = binary.BigEndian.AppendUint32(want, 5)
	want = append(want, 0) // TopicIdPartition's tagged fields
	want = append(want, rec.Segment.SegmentID[:]...)
	want = append(want, 0) // RemoteLogSegmentId's tagged fields
	want = binary.BigEndian.AppendUint32(want, 3)
	want = binary.BigEndian.AppendUint64(want, 4)
	want = append(want, 0, 2, 0) // null custom metadata, state, tagged fields
	if got := appendRLMRecord(nil, &rec); !bytes.Equal(got, want) {
		t.Fatalf("encoded\n% x\nwant\n% x", got, want)
	}
}

// TestRLMRecordCorrupt: damage Kafka's serde refuses is refused here, as
// ErrCorruptMetadata.
func TestRLMRecordCorrupt(t *testing.T) {
	good := appendRLMRecord(nil, &rlmSamples()[0])
	cases := map[string][]byte{
		"empty":           nil,
		"frame version 0": append([]byte{0}, good[1:]...),
		"unknown apiKey":  append([]byte{1, 9}, good[2:]...),
		"version 1":       append([]byte{1, 0, 1}, good[3:]...),
		"short":           good[:len(good)-3],
		"trailing":        append(append([]byte{}, good...), 0),
		"bad state":       append(append([]byte{}, good[:len(good)-2]...), 9, 0),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := decodeRLMRecord(b); !errors.Is(err, ErrCorruptMetadata) {
				t.Fatalf("err %v, want ErrCorruptMetadata", err)
			}
		})
	}
}

// TestMetadataPartition: the partition of a topic-id-partition matches
// Kafka's RemoteLogMetadataTopicPartitioner over 50 partitions (figures
// from Kafka's own code run under Java 17), and murmur2 Kafka's
// UtilsTest vectors.
func TestMetadataPartition(t *testing.T) {
	id := func(msb, lsb uint64) UUID {
		var u UUID
		binary.BigEndian.PutUint64(u[:], msb)
		binary.BigEndian.PutUint64(u[8:], lsb)
		return u
	}
	cases := []struct {
		msb, lsb uint64
		part     int32
		want     int32
	}{
		{0x0102030405060708, 0x090a0b0c0d0e0f10, 0, 13},
		{0x0102030405060708, 0x090a0b0c0d0e0f10, 7, 18},
		{0x0102030405060708, 0x090a0b0c0d0e0f10, 123, 38},
		{0xf1e2d3c4b5a69788, 0x8877665544332211, 0, 31},
		{0xf1e2d3c4b5a69788, 0x8877665544332211, 7, 11},
		{0xf1e2d3c4b5a69788, 0x8877665544332211, 123, 7},
		{0, 1, 0, 35},
		{0, 1, 7, 46},
		{0, 1, 123, 18},
	}
	for _, c := range cases {
		tp := TopicIDPartition{TopicID: id(c.msb, c.lsb), Partition: c.part}
		if got := metadataPartition(tp, 50); got != c.want {
			t.Errorf("metadataPartition(%x %x %d) = %d, want %d", c.msb, c.lsb, c.part, got, c.want)
		}
	}
	for s, want := range map[string]int32{
		"21": -973932308, "foobar": -790332482, "a-little-bit-long-string": -985981536,
		"a-little-bit-longer-string": -1486304829, "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971, "abc": 479470107,
	} {
		if got := murmur2([]byte(s)); got != want {
			t.Errorf("murmur2(%q) = %d, want %d", s, got, want)
		}
	}
}

// FuzzDecodeRLMRecord checks the __remote_log_metadata record decoder:
// it never panics; a record it accepts encodes again to a value that
// decodes to the same record (re-parsing is stable), and that value is
// never longer than the input (the decoder skips tagged fields and
// custom metadata, which the encoder leaves out).
func FuzzDecodeRLMRecord(f *testing.F) {
	for _, rec := range rlmSamples() {
		f.Add(appendRLMRecord(nil, &rec))
	}
	f.Add([]byte{1, 0, 0})
	f.Add([]byte{1, 2, 0, 2, 'x', 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := decodeRLMRecord(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptMetadata) {
				t.Fatalf("error %v does not wrap ErrCorruptMetadata", err)
			}
			return
		}
		again := appendRLMRecord(nil, &rec)
		if len(again) > len(b) {
			t.Fatalf("re-encoded %d bytes from %d", len(again), len(b))
		}
		rec2, err := decodeRLMRecord(again)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if !reflect.DeepEqual(rec, rec2) {
			t.Fatalf("unstable: %+v then %+v", rec, rec2)
		}
	})
}

// badState is an update record whose state byte is 9.
func badState() []byte {
	b := appendRLMRecord(nil, &rlmSamples()[1])
	b[len(b)-2] = 9 // the state, before the empty tagged fields
	return b
}

// FuzzApplyRLMRecords feeds a stream of __remote_log_metadata record
// values (each behind a uvarint length) through the decoder into the
// materialized view, as the replay loop does, with a broker that knows
// one topic of four partitions. It checks that nothing panics and that
// the view stays sound whatever the records say: every segment it holds
// is possible (checkSegment), a partition's segments are ordered by
// start offset with unique ids and at most maxCopyingSegments of them
// COPY_SEGMENT_STARTED, every partition held is known or counted among
// at most maxUnknownPartitions unknown ones, and the finished summary
// (remote start, end and bytes) is the one of its finished segments; no
// partition held has a name no topic can have.
func FuzzApplyRLMRecords(f *testing.F) {
	var stream []byte
	for _, rec := range rlmSamples() {
		b := appendRLMRecord(nil, &rec)
		stream = binary.AppendUvarint(stream, uint64(len(b)))
		stream = append(stream, b...)
	}
	f.Add(stream)
	seg := testSegment(0, 9)
	var life []byte
	for _, rec := range []MetadataRecord{add(seg), update(seg, CopySegmentFinished, 1), update(seg, DeleteSegmentStarted, 2), update(seg, DeleteSegmentFinished, 2)} {
		b := appendRLMRecord(nil, &rec)
		life = binary.AppendUvarint(life, uint64(len(b)))
		life = append(life, b...)
	}
	f.Add(life)
	f.Fuzz(func(t *testing.T, stream []byte) {
		m := viewOnly()
		m.opts.PartitionCount = func(id [16]byte, _ string) (int32, bool) { return 4, UUID(id) == testTP.TopicID }
		for len(stream) > 0 {
			n, k := binary.Uvarint(stream)
			if k <= 0 || n > uint64(len(stream)-k) {
				break
			}
			rec, err := decodeRLMRecord(stream[k : k+int(n)])
			stream = stream[k+int(n):]
			if err == nil {
				m.mu.Lock()
				m.applyLocked(&rec)
				m.mu.Unlock()
			}
		}
		if len(m.unknown) > maxUnknownPartitions {
			t.Fatalf("%d unknown partitions held", len(m.unknown))
		}
		for tp, p := range m.parts {
			if topicname.Validate(tp.Topic) != nil {
				t.Fatalf("partition %q held: no topic has that name", tp.Topic)
			}
			if _, unknown := m.unknown[tp]; !unknown && !m.knownLocked(tp) {
				t.Fatalf("partition %s held but neither known nor counted unknown", tp)
			}
			ids := map[UUID]bool{}
			copying := 0
			for i := range p.segs {
				s := &p.segs[i]
				if err := checkSegment(s); err != nil {
					t.Fatalf("%s holds an impossible segment: %v", tp, err)
				}
				if s.Partition != tp || ids[s.SegmentID] || (i > 0 && s.StartOffset < p.segs[i-1].StartOffset) {
					t.Fatalf("%s: segments out of order or repeated: %+v", tp, p.segs)
				}
				ids[s.SegmentID] = true
				if s.State == CopySegmentStarted {
					copying++
				}
			}
			if copying > maxCopyingSegments {
				t.Fatalf("%s: %d segments being copied", tp, copying)
			}
			rs, err := m.Finished(tp)
			if err != nil {
				t.Fatal(err)
			}
			start, end, bytes := int64(-1), int64(-1), int64(0)
			for _, s := range p.segs {
				if s.State == CopySegmentFinished {
					if start < 0 {
						start = s.StartOffset
					}
					end, bytes = max(end, s.EndOffset+1), bytes+s.SizeInBytes
				}
			}
			if rs.start != start || rs.end != end || rs.bytes != bytes || end == math.MinInt64 {
				t.Fatalf("%s: summary start %d end %d bytes %d, want %d %d %d", tp, rs.start, rs.end, rs.bytes, start, end, bytes)
			}
		}
	})
}
