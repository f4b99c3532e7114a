package pebblelog

import (
	"bytes"
	"testing"
	"time"

	"github.com/sluice/sluice/engine"
)

// FuzzDecode feeds arbitrary keys and values to every decoder of format.go.
// Invariants: no decoder panics; whatever decodes re-encodes to the same
// bytes (the format has one encoding per value).
func FuzzDecode(f *testing.F) {
	f.Add(catalogKey(engine.PartitionID{Topic: "orders", Partition: 7}), make([]byte, 40))
	f.Add(newLogKey(tagBatchIdx, 3, 42), encodeBatchSummary(make([]byte, 16), 4, 100, 12345))
	f.Add([]byte{tagCatalog, 0xff, 0xff}, encodeEpochs([]engine.EpochEntry{{Epoch: 1, StartOffset: 5}}))
	f.Add(newLogKey(tagBatch, 3, 42), encodePointer(make([]byte, pointerLen), 1<<40, 1000, 7))
	f.Add([]byte{tagHighWM}, encodeHighWatermarks(map[engine.PartitionID]int64{{Topic: "a", Partition: 1}: 9, {Topic: "", Partition: 0}: 0}))
	f.Fuzz(func(t *testing.T, k, v []byte) {
		if id, err := parseCatalogKey(k); err == nil && !bytes.Equal(catalogKey(id), k) {
			t.Fatalf("catalog key %x re-encodes as %x", k, catalogKey(id))
		}
		if seg, err := decodeSegment(7, v); err == nil && !bytes.Equal(seg.encode(make([]byte, segSummaryLen)), v) {
			t.Fatalf("segment summary %x does not round-trip", v)
		}
		if bs, err := decodeBatchSummary(k, v); err == nil {
			if got := encodeBatchSummary(make([]byte, 16), int32(bs.last-bs.base), bs.size, bs.maxTs); !bytes.Equal(got, v) {
				t.Fatalf("batch summary %x re-encodes as %x", v, got)
			}
		}
		if e, err := decodeEpochs(v); err == nil && !bytes.Equal(encodeEpochs(e), v) {
			t.Fatalf("epochs %x do not round-trip", v)
		}
		if hw, err := decodeHighWatermarks(v); err == nil && !bytes.Equal(encodeHighWatermarks(hw), v) {
			t.Fatalf("high watermarks %x do not round-trip", v)
		}
		if p, ok, _ := decodePointer(v); ok && !bytes.Equal(encodePointer(make([]byte, pointerLen), p.pos, p.size, p.lastOffsetDelta), v) {
			t.Fatalf("batch pointer %x does not round-trip", v)
		}
	})
}

// TestFlushInterval runs a store with a periodic sync and closes it twice.
func TestFlushInterval(t *testing.T) {
	s, err := engine.Open("pebble", engine.Options{Dir: t.TempDir(), FlushInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := s.CreateLog(pid, engine.LogConfig{})
	for i := 0; i < 20; i++ {
		mustAppend(t, l, batch(1, 1, "i"), 0)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, err := l.Append(batch(1, 1, "x"), engine.AppendOptions{AssignOffsets: true}); err == nil {
		t.Fatal("append after store close succeeded")
	}
}
