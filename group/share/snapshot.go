package share

import "math"

// StateBatch is a run of in-flight offsets with one delivery state and count,
// as ShareSnapshot and ShareUpdate records hold them. Acquired records are
// written as Available: a lock does not survive a restart, the delivery does.
type StateBatch struct {
	First, Last   int64
	DeliveryState RecordState
	DeliveryCount int16
}

// Snapshot is what the share coordinator persists of a share partition.
type Snapshot struct {
	StateEpoch  int32
	StartOffset int64
	Batches     []StateBatch // in offset order, not overlapping, all >= StartOffset
}

// Snapshot returns the partition's durable state. Only offsets whose state
// differs from fresh (Available, never delivered) are listed, so the snapshot
// of a partition with nothing in flight has no batches.
func (p *Partition) Snapshot() Snapshot {
	s := Snapshot{StateEpoch: p.stateEpoch, StartOffset: p.start}
	for i := range p.recs {
		r := &p.recs[i]
		st := r.state
		if st == Acquired {
			st = Available
		}
		if st == Available && r.deliveries == 0 {
			continue
		}
		off := p.start + int64(i)
		if n := len(s.Batches); n > 0 {
			b := &s.Batches[n-1]
			if b.Last == off-1 && b.DeliveryState == st && b.DeliveryCount == r.deliveries {
				b.Last = off
				continue
			}
		}
		s.Batches = append(s.Batches, StateBatch{First: off, Last: off, DeliveryState: st, DeliveryCount: r.deliveries})
	}
	return s
}

// Restore rebuilds a partition from a persisted snapshot. Offsets between the
// start and the last batch that no batch names are fresh (Available,
// undelivered); Acquired is read as Available. Batches below the start
// offset, overlapping or out of order are clipped, not trusted: a damaged
// snapshot yields a smaller state, never a panic. Offsets past
// start+maxInFlight are dropped (redelivered as fresh), which bounds memory.
func Restore(s Snapshot, maxInFlight int) *Partition {
	p := &Partition{start: s.StartOffset, stateEpoch: s.StateEpoch}
	if maxInFlight <= 0 {
		maxInFlight = 1 << 16
	}
	limit := s.StartOffset + int64(maxInFlight) // exclusive
	if limit < s.StartOffset {
		limit = math.MaxInt64
	}
	for _, b := range s.Batches {
		first := max(b.First, p.Next())
		last := min(b.Last, limit-1)
		if first > last {
			continue
		}
		st := b.DeliveryState
		switch st {
		case Available, Acquired:
			st = Available
		case Acknowledged, Archived:
		default:
			continue
		}
		for p.Next() < first {
			p.recs = append(p.recs, record{})
		}
		for off := first; off <= last; off++ {
			p.recs = append(p.recs, record{state: st, deliveries: max(b.DeliveryCount, 0)})
		}
	}
	// Trailing fresh records carry nothing; leading finished ones are done.
	for len(p.recs) > 0 {
		r := p.recs[len(p.recs)-1]
		if r.state != Available || r.deliveries != 0 {
			break
		}
		p.recs = p.recs[:len(p.recs)-1]
	}
	p.advance()
	return p
}

// StateEpoch is the share-partition state epoch.
func (p *Partition) StateEpoch() int32 { return p.stateEpoch }

// Clone returns a deep copy of p (to undo a change whose persistence
// failed).
func (p *Partition) Clone() *Partition {
	q := *p
	q.recs = append([]record(nil), p.recs...)
	q.dead = append([]DeadLetter(nil), p.dead...)
	return &q
}
