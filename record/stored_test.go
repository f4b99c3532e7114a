package record

import (
	"bytes"
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

// A follower checks what its leader sends as Kafka's does: framing, counts
// and CRC, not the records of a data batch (the leader walked them), while
// a control batch, whose marker the follower reads, is walked.
func TestValidateReplicated(t *testing.T) {
	recs := []BuildRecord{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b"), Value: []byte("2")}, {Key: []byte("c"), Value: []byte("3")}}
	full := AppendBatch(nil, BatchOptions{BaseOffset: 10}, recs)
	cleaned := rebuild(t, full, []int{0, 2})
	for name, b := range map[string][]byte{"whole": full, "cleaned": cleaned, "empty": rebuild(t, full, nil)} {
		if _, err := ValidateReplicated(b); err != nil {
			t.Errorf("%s: ValidateReplicated = %v", name, err)
		}
	}

	// Records that do not walk, under a CRC that matches them: refused
	// by ValidateStored (recovery), taken by a follower.
	garbled := garbleRecords(full)
	if _, err := ValidateStored(garbled); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ValidateStored(garbled records) = %v, want ErrCorrupt", err)
	}
	if n, err := ValidateReplicated(garbled); err != nil || n != len(garbled) {
		t.Fatalf("ValidateReplicated(garbled records) = %d, %v; want %d, nil", n, err, len(garbled))
	}

	// What the header says is still checked.
	bad := append([]byte(nil), full...)
	Batch(bad).setCRC(Batch(bad).CRC() ^ 1)
	tooMany := append([]byte(nil), full...)
	binary.BigEndian.PutUint32(tooMany[offRecordCount:], 4) // lastOffsetDelta is 2
	Batch(tooMany).setCRC(Batch(tooMany).ComputeCRC())
	codec := append([]byte(nil), full...)
	binary.BigEndian.PutUint16(codec[offAttributes:], 7)
	Batch(codec).setCRC(Batch(codec).ComputeCRC())
	for name, c := range map[string]struct {
		b    []byte
		kind error
	}{
		"bad crc":         {bad, ErrCorrupt},
		"count > span":    {tooMany, ErrCorrupt},
		"unknown codec":   {codec, ErrInvalid},
		"short":           {full[:HeaderSize-1], ErrCorrupt},
		"length past end": {full[:len(full)-1], ErrCorrupt},
	} {
		if _, err := ValidateReplicated(c.b); !errors.Is(err, c.kind) {
			t.Errorf("%s: ValidateReplicated = %v, want %v", name, err, c.kind)
		}
	}

	// A control batch with garbled records is refused.
	marker := AppendEndTxnMarker(nil, MarkerOptions{BaseOffset: 20, ProducerID: 7}, EndTxnMarker{Type: ControlCommit})
	if _, err := ValidateReplicated(marker); err != nil {
		t.Fatalf("marker: %v", err)
	}
	gm := garbleRecords(marker)
	if _, err := ValidateReplicated(gm); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("marker with garbled records: %v, want ErrCorrupt", err)
	}
	if _, _, err := ValidateAllReplicated(bytes.Join([][]byte{full, marker, garbled}, nil)); err != nil {
		t.Fatalf("ValidateAllReplicated: %v", err)
	}
	if _, _, err := ValidateAllReplicated(bytes.Join([][]byte{full, gm}, nil)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ValidateAllReplicated with a garbled marker: %v", err)
	}
}

// garbleRecords returns a copy of batch b with every byte after the header
// 0xff and the CRC fixed to match: records that do not parse, vouched for.
func garbleRecords(b []byte) []byte {
	g := bytes.Clone(b)
	for i := HeaderSize; i < len(g); i++ {
		g[i] = 0xff
	}
	Batch(g).setCRC(Batch(g).ComputeCRC())
	return g
}
