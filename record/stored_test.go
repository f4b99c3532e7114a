package record

import (
	"encoding/binary"
	"errors"
	"testing"
)

// A cleaned batch (fewer records than its offset span, gaps in the deltas)
// and a batch kept empty for its producer are valid as stored, not as sent.
func TestValidateStoredAllowsCleanedBatches(t *testing.T) {
	recs := []BuildRecord{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b"), Value: []byte("2")}, {Key: []byte("c"), Value: []byte("3")}}
	full := AppendBatch(nil, BatchOptions{BaseOffset: 10}, recs)
	if _, err := ValidateStored(full); err != nil {
		t.Fatalf("a whole batch: %v", err)
	}
	// Drop the middle record: deltas 0 and 2, count 2, lastOffsetDelta 2.
	cleaned := rebuild(t, full, []int{0, 2})
	if _, err := Validate(cleaned); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Validate(cleaned) = %v, want ErrInvalid", err)
	}
	if _, err := ValidateStored(cleaned); err != nil {
		t.Fatalf("ValidateStored(cleaned) = %v", err)
	}
	empty := rebuild(t, full, nil)
	if _, err := ValidateStored(empty); err != nil {
		t.Fatalf("ValidateStored(empty) = %v", err)
	}
	// Deltas out of order, or past lastOffsetDelta, are corrupt.
	for name, keep := range map[string][]int{"reordered": {2, 0}, "repeated": {1, 1}} {
		if _, err := ValidateStored(rebuild(t, full, keep)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: ValidateStored = %v, want ErrCorrupt", name, err)
		}
	}
	bad := append([]byte(nil), cleaned...)
	Batch(bad).setCRC(Batch(bad).CRC() ^ 1)
	if _, err := ValidateStored(bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bad crc: %v", err)
	}
	if _, _, err := ValidateAllStored(append(append([]byte(nil), cleaned...), empty...)); err != nil {
		t.Fatalf("ValidateAllStored: %v", err)
	}
}

// rebuild returns b with only the records at the given indexes, in that
// order, recordCount and CRC fixed, lastOffsetDelta kept.
func rebuild(t *testing.T, b []byte, keep []int) []byte {
	t.Helper()
	var spans [][]byte
	raw := Batch(b).Records()
	for len(raw) > 0 {
		var r Record
		n, err := parseRecord(raw, &r)
		if err != nil {
			t.Fatal(err)
		}
		spans = append(spans, raw[:n])
		raw = raw[n:]
	}
	out := append([]byte(nil), b[:HeaderSize]...)
	for _, i := range keep {
		out = append(out, spans[i]...)
	}
	bt := Batch(out)
	binary.BigEndian.PutUint32(out[offBatchLength:], uint32(len(out)-LogOverhead))
	binary.BigEndian.PutUint32(out[offRecordCount:], uint32(len(keep)))
	bt.setCRC(bt.ComputeCRC())
	return out
}
