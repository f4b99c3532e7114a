package server

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice/sluice/record"
)

// fakeSubjects registers ids under subjects and counts the lookups; for
// the record strategies, types and names give an id's schema type and
// record name (names by id, or "id/i,j" with Protobuf message indexes).
type fakeSubjects struct {
	ids     map[string][]int
	types   map[int]string
	names   map[string]string
	lookups int
}

func (f *fakeSubjects) SchemaType(_ context.Context, id int) (string, error) {
	f.lookups++
	if t, ok := f.types[id]; ok {
		return t, nil
	}
	return "", errors.New("not found")
}

func (f *fakeSubjects) RecordName(_ context.Context, id int, msgIndexes []int) (string, error) {
	f.lookups++
	k := strconv.Itoa(id)
	if msgIndexes != nil {
		k += "/" + strings.Trim(strings.Join(strings.Fields(fmt.Sprint(msgIndexes)), ","), "[]")
	}
	if n, ok := f.names[k]; ok {
		return n, nil
	}
	return "", errors.New("no record name")
}

func (f *fakeSubjects) SubjectHasID(_ context.Context, subject string, id int) (bool, error) {
	f.lookups++
	for _, x := range f.ids[subject] {
		if x == id {
			return true, nil
		}
	}
	return false, nil
}

func schemaBatch(codec, n, id int) []byte {
	recs := make([]record.BuildRecord, n)
	for i := range recs {
		v := make([]byte, 5, 40)
		binary.BigEndian.PutUint32(v[1:], uint32(id))
		recs[i] = record.BuildRecord{Value: append(v, "some avro-encoded body......"...)}
	}
	return record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Codec: codec}, recs)
}

// TestSchemaCheckCachesAndDoesNotAllocatePerRecord: the registry is asked
// once per (topic, id) pair, not per record or batch; checking a batch of
// 500 records allocates no more than a batch of 1 (uncompressed and
// compressed); a miss is asked again (a schema registered later passes).
func TestSchemaCheckCachesAndDoesNotAllocatePerRecord(t *testing.T) {
	reg := &fakeSubjects{ids: map[string][]int{"t-value": {7}}}
	c := schemaCheck{reg: reg}
	ctx := context.Background()
	for _, codec := range []int{record.CodecNone, record.CodecLZ4} {
		one, many := schemaBatch(codec, 1, 7), schemaBatch(codec, 500, 7)
		for _, b := range [][]byte{one, many, many} {
			if err := c.validate(ctx, "t", strategyOff, strategyTopic, 1<<20, b); err != nil {
				t.Fatal(err)
			}
		}
		a1 := testing.AllocsPerRun(50, func() { _ = c.validate(ctx, "t", strategyOff, strategyTopic, 1<<20, one) })
		a500 := testing.AllocsPerRun(50, func() { _ = c.validate(ctx, "t", strategyOff, strategyTopic, 1<<20, many) })
		if a500 > a1 && !raceEnabled { // the race detector's pools drop entries
			t.Errorf("codec %d: %v allocations for 500 records, %v for 1: allocates per record", codec, a500, a1)
		}
	}
	if reg.lookups != 1 {
		t.Fatalf("%d registry lookups, want 1 (cached)", reg.lookups)
	}
	bad := schemaBatch(record.CodecNone, 3, 8)
	err := c.validate(ctx, "t", strategyOff, strategyTopic, 1<<20, bad)
	var re *schemaRecordError
	if !errors.As(err, &re) || re.index != 0 || !errors.Is(err, record.ErrInvalid) {
		t.Fatalf("id 8: %v, want a schema error on record 0", err)
	}
	reg.ids["t-value"] = append(reg.ids["t-value"], 8)
	if err := c.validate(ctx, "t", strategyOff, strategyTopic, 1<<20, bad); err != nil {
		t.Fatalf("id 8 once registered: %v", err)
	}
}

// BenchmarkSchemaCheck is the check's cost on a batch of 100 records.
func BenchmarkSchemaCheck(b *testing.B) {
	c := schemaCheck{reg: &fakeSubjects{ids: map[string][]int{"t-value": {7}}}}
	for _, bc := range []struct {
		name  string
		codec int
	}{{"none", record.CodecNone}, {"lz4", record.CodecLZ4}} {
		batch := schemaBatch(bc.codec, 100, 7)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(batch)))
			for i := 0; i < b.N; i++ {
				if err := c.validate(context.Background(), "t", strategyOff, strategyTopic, 1<<20, batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSchemaCheckBoundsDecompression: a compressed batch that decompresses
// past the topic's bound is not decompressed in full by the check, which
// leaves it to the append's validation (MESSAGE_TOO_LARGE) rather than
// judging its records.
func TestSchemaCheckBoundsDecompression(t *testing.T) {
	c := schemaCheck{reg: &fakeSubjects{}}
	recs := make([]record.BuildRecord, 200)
	for i := range recs {
		recs[i] = record.BuildRecord{Value: make([]byte, 1000)} // no framing: refused if read
	}
	bomb := record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Codec: record.CodecGzip}, recs)
	if err := c.validate(context.Background(), "t", strategyOff, strategyTopic, 1<<20, bomb); !errors.Is(err, errSchemaValidation) {
		t.Fatalf("within the bound: %v, want a schema error", err)
	}
	if err := c.validate(context.Background(), "t", strategyOff, strategyTopic, 64<<10, bomb); err != nil {
		t.Fatalf("past the bound (200 KB > 64 KiB): %v, want nil (the append refuses it)", err)
	}
}

// TestSchemaCheckRecordStrategies: under RecordNameStrategy and
// TopicRecordNameStrategy the subject comes from the id's record name, a
// Protobuf record's message indexes selecting the message; each (id,
// framing) pair is asked once and a batch of 500 records allocates no more
// than a batch of 1; hostile message-index framings (a huge or negative
// count, truncated varints) are refused without allocating per index.
func TestSchemaCheckRecordStrategies(t *testing.T) {
	reg := &fakeSubjects{
		ids:   map[string][]int{"com.example.Order": {1}, "shop.Refund": {2}, "t-shop.Order": {2}},
		types: map[int]string{1: "AVRO", 2: "PROTOBUF"},
		names: map[string]string{"1": "com.example.Order", "2": "shop.Order", "2/1": "shop.Refund", "2/0": "shop.Order"},
	}
	c := schemaCheck{reg: reg}
	ctx := context.Background()
	batch := func(n int, value []byte) []byte {
		recs := make([]record.BuildRecord, n)
		for i := range recs {
			recs[i] = record.BuildRecord{Value: value}
		}
		return record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	}
	value := func(id int, framing ...byte) []byte {
		v := binary.BigEndian.AppendUint32([]byte{0}, uint32(id))
		return append(append(v, framing...), "body"...)
	}
	for _, tc := range []struct {
		name     string
		strategy subjectStrategy
		value    []byte
		ok       bool
	}{
		{"avro record name", strategyRecord, value(1), true},
		{"protobuf message 1 (zigzag count 1, index 1)", strategyRecord, value(2, 2, 2), true},
		{"protobuf first message, not under shop.Order", strategyRecord, value(2, 0), false},
		{"topic-record protobuf first message", strategyTopicRecord, value(2, 0), true},
		{"topic-record avro, not under t-com.example.Order", strategyTopicRecord, value(1), false},
		{"protobuf huge count", strategyRecord, value(2, 0xfe, 0xff, 0xff, 0xff, 0x0f), false},
		{"protobuf negative count", strategyRecord, value(2, 1), false},
		{"protobuf truncated index", strategyRecord, value(2, 2, 0x80), false},
		{"unknown id", strategyRecord, value(9), false},
	} {
		err := c.validate(ctx, "t", strategyOff, tc.strategy, 1<<20, batch(3, tc.value))
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	// Cached: a second batch asks nothing, and 500 records allocate no
	// more than 1.
	one, many := batch(1, value(2, 2, 2)), batch(500, value(2, 2, 2))
	before := reg.lookups
	for _, b := range [][]byte{one, many} {
		if err := c.validate(ctx, "t", strategyOff, strategyRecord, 1<<20, b); err != nil {
			t.Fatal(err)
		}
	}
	if reg.lookups != before {
		t.Errorf("%d registry lookups for cached pairs, want 0", reg.lookups-before)
	}
	a1 := testing.AllocsPerRun(50, func() { _ = c.validate(ctx, "t", strategyOff, strategyRecord, 1<<20, one) })
	a500 := testing.AllocsPerRun(50, func() { _ = c.validate(ctx, "t", strategyOff, strategyRecord, 1<<20, many) })
	if a500 > a1 && !raceEnabled {
		t.Errorf("%v allocations for 500 records, %v for 1: allocates per record", a500, a1)
	}
}

// FuzzProtoMessageIndexes: any framing is read without a panic, within the
// bytes given, and at most maxMessageIndexes indexes.
func FuzzProtoMessageIndexes(f *testing.F) {
	for _, seed := range [][]byte{{0}, {2, 2}, {4, 0, 2}, {0xfe, 0xff, 0xff, 0xff, 0x0f}, {1}, {2, 0x80}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		count := 0
		n, err := protoMessageIndexes(b, func(int) { count++ })
		if err == nil && (n > len(b) || n <= 0 || count > maxMessageIndexes) {
			t.Fatalf("%x: length %d, %d indexes", b, n, count)
		}
	})
}
