// Package clockring is the CLOCK replacement ring with which the storage
// backends bound their open files (segment's open segments, pebblelog's
// data files; log.segment.open.files.max).
//
// CLOCK approximates LRU without a global lock on a hit: the owner of an
// entry sets its used bit when it uses it; the sweep clears set bits and
// takes the first entry whose bit was clear (and that its owner does not
// hold open, see Entry.ClockSkip) out of the ring, for the caller to close.
package clockring

import "sync"

// Entry is what a Ring holds: a pointer type whose ring index lives in the
// entry itself, so that removal is O(1).
type Entry interface {
	comparable
	// ClockSlot returns where the ring keeps the entry's index: -1 while
	// it is not in the ring. Only the Ring reads or writes it, with its
	// lock held; a new entry must start at -1.
	ClockSlot() *int
	// ClockSkip reports whether the sweep must pass over the entry this
	// time: it was used since the sweep last looked (the method clears the
	// bit) or cannot be closed now. Called with the Ring's lock held, so it
	// must not take a lock that is held while calling into the Ring.
	ClockSkip() bool
}

// Ring is a bounded set of open entries. Safe for concurrent use.
type Ring[E Entry] struct {
	mu   sync.Mutex
	max  int
	ring []E // ring[i].ClockSlot() == i
	hand int // next index the sweep looks at
}

// New returns a ring that keeps at most bound entries (at least 1).
func New[E Entry](bound int) *Ring[E] { return &Ring[E]{max: max(bound, 1)} }

// Max returns the ring's bound.
func (r *Ring[E]) Max() int { return r.max }

// Len returns how many entries are in the ring.
func (r *Ring[E]) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ring)
}

// Add puts e, just opened, in the ring (once) and reports whether the ring
// is now over its bound: the caller then evicts (Victim) until it is not.
func (r *Ring[E]) Add(e E) (over bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := e.ClockSlot(); *s < 0 {
		*s = len(r.ring)
		r.ring = append(r.ring, e)
	}
	return len(r.ring) > r.max
}

// Remove takes e out of the ring, if it is there.
func (r *Ring[E]) Remove(e E) {
	r.mu.Lock()
	r.removeLocked(e)
	r.mu.Unlock()
}

func (r *Ring[E]) removeLocked(e E) {
	s := e.ClockSlot()
	i := *s
	if i < 0 {
		return
	}
	last := len(r.ring) - 1
	r.ring[i] = r.ring[last]
	*r.ring[i].ClockSlot() = i
	var zero E
	r.ring[last] = zero
	r.ring = r.ring[:last]
	*s = -1
}

// Victim takes the next entry to close out of the ring while it is over its
// bound: ok false when it is within it, or when two sweeps found every
// entry skipped (all held open). The caller closes the victim, or Adds it
// back if its owner took it meanwhile.
func (r *Ring[E]) Victim() (v E, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for tries := 2*len(r.ring) + 1; tries > 0 && len(r.ring) > r.max; tries-- {
		if r.hand >= len(r.ring) {
			r.hand = 0
		}
		e := r.ring[r.hand]
		if e.ClockSkip() {
			r.hand++
			continue
		}
		r.removeLocked(e)
		return e, true
	}
	return v, false
}

// TakeAll empties the ring and returns what it held (a Store's Close).
func (r *Ring[E]) TakeAll() []E {
	r.mu.Lock()
	defer r.mu.Unlock()
	all := r.ring
	for _, e := range all {
		*e.ClockSlot() = -1
	}
	r.ring, r.hand = nil, 0
	return all
}
