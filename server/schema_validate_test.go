package server

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/sluice/sluice/record"
)

// fakeSubjects registers ids under subjects and counts the lookups.
type fakeSubjects struct {
	ids     map[string][]int
	lookups int
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
			if err := c.validate(ctx, "t", false, true, 1<<20, b); err != nil {
				t.Fatal(err)
			}
		}
		a1 := testing.AllocsPerRun(50, func() { _ = c.validate(ctx, "t", false, true, 1<<20, one) })
		a500 := testing.AllocsPerRun(50, func() { _ = c.validate(ctx, "t", false, true, 1<<20, many) })
		if a500 > a1 && !raceEnabled { // the race detector's pools drop entries
			t.Errorf("codec %d: %v allocations for 500 records, %v for 1: allocates per record", codec, a500, a1)
		}
	}
	if reg.lookups != 1 {
		t.Fatalf("%d registry lookups, want 1 (cached)", reg.lookups)
	}
	bad := schemaBatch(record.CodecNone, 3, 8)
	err := c.validate(ctx, "t", false, true, 1<<20, bad)
	var re *schemaRecordError
	if !errors.As(err, &re) || re.index != 0 || !errors.Is(err, record.ErrInvalid) {
		t.Fatalf("id 8: %v, want a schema error on record 0", err)
	}
	reg.ids["t-value"] = append(reg.ids["t-value"], 8)
	if err := c.validate(ctx, "t", false, true, 1<<20, bad); err != nil {
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
				if err := c.validate(context.Background(), "t", false, true, 1<<20, batch); err != nil {
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
	if err := c.validate(context.Background(), "t", false, true, 1<<20, bomb); !errors.Is(err, errSchemaValidation) {
		t.Fatalf("within the bound: %v, want a schema error", err)
	}
	if err := c.validate(context.Background(), "t", false, true, 64<<10, bomb); err != nil {
		t.Fatalf("past the bound (200 KB > 64 KiB): %v, want nil (the append refuses it)", err)
	}
}
