package offsets

// What the persistence of consumer groups (consumerpersist.go) and of share
// groups (sharepersist.go) have in common: both append their records
// through the offsets path as one acks=all batch, and both hand the group
// coordinator, on load, the latest record of each key in log order. They
// differ only in their key and value layouts.

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/sluice/sluice/coordlog"
	"github.com/sluice/sluice/record"
)

// groupRecord is a group record of one kind (ConsumerRecord, ShareRecord).
type groupRecord interface {
	// group is the name of the group the record belongs to.
	group() string
	// encode returns the record's key and value, nil for a tombstone.
	encode() (key, value []byte, err error)
}

// persistGroupRecords appends recs, records of group name, as one batch
// with acks=all to the group's partition and returns once they are
// committed. Errors wrap coordlog.ErrNotCoordinator when this broker does
// not lead that partition, ErrBadRecord for a record of another group,
// else are encode's.
func persistGroupRecords[R groupRecord](ctx context.Context, c *Coordinator, name string, recs []R) error {
	if len(recs) == 0 {
		return nil
	}
	now := c.opts.Now().UnixMilli()
	out := make([]record.BuildRecord, 0, len(recs))
	for _, r := range recs {
		if g := r.group(); g != name {
			return fmt.Errorf("%w: record of group %q persisted for group %q", ErrBadRecord, g, name)
		}
		k, v, err := r.encode()
		if err != nil {
			return err
		}
		out = append(out, record.BuildRecord{Key: k, Value: v, Timestamp: now})
	}
	p, err := c.leaderFor(name)
	if err != nil {
		return err
	}
	return coordlog.Append(ctx, p, out, commitTimeout, coordlog.ErrNotCoordinator)
}

// latestRecords holds, per group, the latest record of each key met in a
// replay (what compaction would keep): l[group][string(key)].
type latestRecords[R any] map[string]map[string]latestEntry[R]

// latestEntry is the latest record of one key and its log offset.
type latestEntry[R any] struct {
	rec R
	pos int64
}

// keep records rec, of group at offset pos, as the latest of key.
func (l *latestRecords[R]) keep(group string, key []byte, rec R, pos int64) {
	if *l == nil {
		*l = latestRecords[R]{}
	}
	m := (*l)[group]
	if m == nil {
		m = map[string]latestEntry[R]{}
		(*l)[group] = m
	}
	m[string(key)] = latestEntry[R]{rec: rec, pos: pos}
}

// groups returns, for each group match selects, the latest record of each
// of its keys in log order (tombstones included: the group coordinator's
// replay applies them).
func (l latestRecords[R]) groups(match func(string) bool) map[string][]R {
	out := map[string][]R{}
	for g, m := range l {
		if !match(g) {
			continue
		}
		es := make([]latestEntry[R], 0, len(m))
		for _, e := range m {
			es = append(es, e)
		}
		slices.SortFunc(es, func(a, b latestEntry[R]) int { return cmp.Compare(a.pos, b.pos) })
		recs := make([]R, len(es))
		for i, e := range es {
			recs[i] = e.rec
		}
		out[g] = recs
	}
	return out
}
