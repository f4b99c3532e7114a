package compact

import (
	"fmt"
	"testing"
)

func TestOffsetMap(t *testing.T) {
	m := NewOffsetMap(1000 * BytesPerEntry)
	if m.Slots() != 1000 || m.Latest() != -1 {
		t.Fatalf("slots %d latest %d", m.Slots(), m.Latest())
	}
	keys := make([][]byte, 900)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key-%d", i))
		if !m.Put(keys[i], int64(i)) {
			t.Fatalf("Put %d refused", i)
		}
	}
	if !m.Full() || m.Len() != 900 || m.Latest() != 899 {
		t.Fatalf("full %v len %d latest %d, want true 900 899", m.Full(), m.Len(), m.Latest())
	}
	if m.Put([]byte("one more"), 900) {
		t.Fatal("a new key was accepted past the load factor")
	}
	if !m.Put(keys[3], 1000) {
		t.Fatal("an update of a present key was refused when full")
	}
	for i, k := range keys {
		want := int64(i)
		if i == 3 {
			want = 1000
		}
		if o, ok := m.Get(k); !ok || o != want {
			t.Fatalf("Get(%s) = %d %v, want %d", k, o, ok, want)
		}
	}
	if _, ok := m.Get([]byte("absent")); ok {
		t.Fatal("Get of an absent key found it")
	}
	if _, ok := m.Get(nil); ok {
		t.Fatal("Get(nil) found it")
	}
	m.Clear()
	if m.Len() != 0 || m.Full() || m.Latest() != -1 {
		t.Fatal("Clear left state")
	}
	if _, ok := m.Get(keys[0]); ok {
		t.Fatal("key found after Clear")
	}
}

// TestOffsetMapLoadOne fills every slot: lookups of absent keys must still
// end (the linear tail bounds the probe sequence).
func TestOffsetMapLoadOne(t *testing.T) {
	m := NewOffsetMapLoad(7*BytesPerEntry, 1)
	for i := 0; i < 7; i++ {
		if !m.Put([]byte{byte(i)}, int64(i)) {
			t.Fatalf("Put %d refused", i)
		}
	}
	if m.Put([]byte("x"), 9) {
		t.Fatal("Put into a full table accepted")
	}
	if _, ok := m.Get([]byte("x")); ok {
		t.Fatal("absent key found")
	}
}

func TestOffsetMapAllocs(t *testing.T) {
	m := NewOffsetMap(mib)
	key := []byte("some-key-of-moderate-length")
	if n := testing.AllocsPerRun(100, func() { m.Put(key, 1); m.Get(key) }); n != 0 {
		t.Fatalf("Put+Get allocate %v times", n)
	}
}

func TestNewOffsetMapTooSmall(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	NewOffsetMap(BytesPerEntry)
}

// BenchmarkOffsetMap measures Put and Get at a load factor near Kafka's
// 0.9, where probe sequences are longest.
func BenchmarkOffsetMap(b *testing.B) {
	const n = 100_000
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("user-%08d", i))
	}
	m := NewOffsetMap(n * BytesPerEntry * 10 / 9)
	b.Run("op=put", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if i%n == 0 {
				m.Clear()
			}
			m.Put(keys[i%n], int64(i))
		}
	})
	m.Clear()
	for i, k := range keys[:m.maxEntries] {
		m.Put(k, int64(i))
	}
	b.Run("op=get", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			m.Get(keys[i%n])
		}
	})
}

// TestOffsetMapClearEmptiesTable: after Clear every slot is empty again,
// whether the table was mapped (its pages dropped) or zeroed, for a table
// of less than a page and one of many pages, filled to the load factor
// twice over.
func TestOffsetMapClearEmptiesTable(t *testing.T) {
	for _, slots := range []int{7, 100_000} {
		t.Run(fmt.Sprintf("slots=%d", slots), func(t *testing.T) {
			m := NewOffsetMap(slots * BytesPerEntry)
			for round := range 2 {
				for i := 0; !m.Full(); i++ {
					m.Put([]byte(fmt.Sprintf("round-%d-key-%d", round, i)), int64(i))
				}
				m.Clear()
				for i, s := range m.table {
					if s != (slot{}) {
						t.Fatalf("round %d: slot %d is %+v after Clear", round, i, s)
					}
				}
				if m.Len() != 0 {
					t.Fatalf("round %d: Len %d after Clear", round, m.Len())
				}
			}
		})
	}
}
