package replication

import (
	"math"
	"reflect"
	"testing"
)

// FuzzProducerState drives the producer table with requests decoded from
// the input (each 5 bytes: producer, epoch, sequence, batch count, and
// whether the round commits or rolls back) and checks, against nothing but
// the table's own rules:
//   - it never panics;
//   - a rolled-back request leaves the table exactly as it was;
//   - an accepted, committed batch of a known producer follows its last
//     sequence (with wrap-around) or restarts at 0 under a newer epoch;
//   - a duplicate reports offsets that were handed out for the same
//     producer, epoch and sequence range;
//   - a producer never keeps more than maxProducerBatches batches.
func FuzzProducerState(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1})
	f.Add([]byte{1, 2, 255, 3, 1, 1, 1, 0, 1, 0, 1, 2, 0, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := newProducerState(0)
		type key struct {
			pid         int64
			epoch       int16
			first, last int32
		}
		handed := map[key]batchMeta{}
		next := int64(0)
		for len(data) >= 5 {
			pid, epoch := int64(data[0]%4), int16(data[1]%3)
			seq := int32(data[2]) - 8 // small values, and near MaxInt32 below
			if data[2] >= 240 {
				seq = math.MaxInt32 - int32(data[2]-240)
			}
			n := 1 + int(data[3]%4)
			commit := data[4]%4 != 0
			data = data[5:]

			b := batch(pid, epoch, max(seq, 0), n)
			before := clone(s)
			var prev *producerEntry
			if e := s.producers[pid]; e != nil {
				c := *e
				prev = &c
			}
			res, dup, err := s.check(b, next, 0)
			bt := recordBatch(b)
			switch {
			case err != nil:
				if len(s.undo) != 0 || !sameTables(s, before) {
					t.Fatalf("failed check changed the table")
				}
			case res == checkDuplicate:
				k := key{pid, epoch, bt.BaseSequence(), bt.LastSequence()}
				if m, ok := handed[k]; !ok || m != dup {
					t.Fatalf("duplicate %+v of a batch never handed out (%+v)", dup, k)
				}
			case !commit:
				s.rollback(stateMark{})
				if !sameTables(s, before) {
					t.Fatalf("rollback did not restore the table")
				}
			default:
				s.commit()
				if prev != nil {
					last, ok := prev.last()
					switch {
					case epoch < prev.epoch:
						t.Fatalf("older epoch %d accepted over %d", epoch, prev.epoch)
					case epoch > prev.epoch && bt.BaseSequence() != 0:
						t.Fatalf("new epoch accepted at sequence %d", bt.BaseSequence())
					case epoch == prev.epoch && ok && !inSequence(last.lastSeq, bt.BaseSequence()):
						t.Fatalf("sequence %d accepted after %d", bt.BaseSequence(), last.lastSeq)
					}
				}
				handed[key{pid, epoch, bt.BaseSequence(), bt.LastSequence()}] = batchMeta{
					firstSeq: bt.BaseSequence(), lastSeq: bt.LastSequence(),
					firstOffset: next, lastOffset: next + int64(n) - 1,
				}
				next += int64(n)
			}
			for _, e := range s.producers {
				if e.n > maxProducerBatches {
					t.Fatalf("%d batches kept", e.n)
				}
			}
		}
	})
}

// sameTables reports whether a and b hold equal producer entries (a nil
// table, before the first entry, equals an emptied one).
func sameTables(a, b *producerState) bool {
	if len(a.producers) == 0 && len(b.producers) == 0 {
		return true
	}
	return reflect.DeepEqual(a.producers, b.producers)
}

// clone deep-copies a producer table.
func clone(s *producerState) *producerState {
	c := newProducerState(0)
	for pid, e := range s.producers {
		v := *e
		c.put(pid, &v)
	}
	return c
}
