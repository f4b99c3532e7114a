package clockring

import "testing"

type item struct {
	slot   int
	used   bool
	pinned bool
}

func (i *item) ClockSlot() *int { return &i.slot }
func (i *item) ClockSkip() bool {
	u := i.used
	i.used = false
	return u || i.pinned
}

func newItem() *item { return &item{slot: -1} }

// TestRing: the bound, second chances for used entries, pinned entries
// never taken, O(1) removal keeping slots consistent, TakeAll.
func TestRing(t *testing.T) {
	r := New[*item](2)
	a, b, c := newItem(), newItem(), newItem()
	if r.Add(a) || r.Add(b) || r.Add(a) {
		t.Fatal("over the bound at 2 entries (or a duplicate counted)")
	}
	a.used = true
	if !r.Add(c) {
		t.Fatal("3 entries in a ring of 2 not over")
	}
	// a was used: it gets a second chance; b goes.
	if v, ok := r.Victim(); !ok || v != b || b.slot != -1 {
		t.Fatalf("victim %p ok %v, want b", v, ok)
	}
	if _, ok := r.Victim(); ok {
		t.Fatal("a victim while within the bound")
	}
	for i, e := range r.ring {
		if e.slot != i {
			t.Fatalf("ring[%d] has slot %d", i, e.slot)
		}
	}
	// Everything pinned: no victim even when over.
	a.pinned, c.pinned = true, true
	d := newItem()
	d.pinned = true
	r.Add(d)
	if _, ok := r.Victim(); ok {
		t.Fatal("a pinned entry was taken")
	}
	r.Remove(a)
	r.Remove(a)
	if r.Len() != 2 || a.slot != -1 {
		t.Fatalf("after Remove: %d entries, a.slot %d", r.Len(), a.slot)
	}
	all := r.TakeAll()
	if len(all) != 2 || r.Len() != 0 || c.slot != -1 || d.slot != -1 {
		t.Fatalf("TakeAll: %d taken, %d left", len(all), r.Len())
	}
	if New[*item](0).max != 1 {
		t.Fatal("a bound below 1 is not 1")
	}
}
