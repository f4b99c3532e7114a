package pebblelog

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sluice/sluice/engine"
)

// TestHighWatermarksDamaged: a damaged high watermarks value is an error
// wrapping engine.ErrCorruptStore naming the key and the store, it does not
// stop the store from opening, and the next save replaces it.
func TestHighWatermarksDamaged(t *testing.T) {
	dir := t.TempDir()
	hw := map[engine.PartitionID]int64{{Topic: "b", Partition: 0}: 3, {Topic: "a", Partition: 2}: 1, {Topic: "a", Partition: 1}: 5}
	good := encodeHighWatermarks(hw)
	for name, v := range map[string][]byte{
		"empty":     {},
		"count":     good[:4],
		"torn":      good[:len(good)-1],
		"trailing":  append(append([]byte(nil), good...), 0),
		"unordered": append(append([]byte{0, 0, 0, 2}, good[4+2+1+12:4+2*(2+1+12)]...), good[4:4+2+1+12]...),
		"negative":  append([]byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0}, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
	} {
		t.Run("value="+name, func(t *testing.T) {
			s := open(t, dir)
			if err := s.(*Store).db.Set([]byte{tagHighWM}, v, pebble.Sync); err != nil {
				t.Fatal(err)
			}
			s.Close()
			s = open(t, dir)
			defer s.Close()
			hs := s.(engine.HighWatermarkStore)
			_, err := hs.HighWatermarks()
			if !errors.Is(err, engine.ErrCorruptStore) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "high watermarks") {
				t.Fatalf("value %x: error %v, want ErrCorruptStore naming the key and %s", v, err, dir)
			}
			if err := hs.SaveHighWatermarks(hw); err != nil {
				t.Fatal(err)
			}
			if got, err := hs.HighWatermarks(); err != nil || !maps.Equal(got, hw) {
				t.Fatalf("after saving over the damage: %v, %v", got, err)
			}
		})
	}
}
