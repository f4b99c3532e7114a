package offsets

// The persistence of next-generation consumer groups (KIP-848) in
// __consumer_offsets: the records of consumerformat.go appended through the
// same path as offset commits (PersistConsumer), and, on load, the latest
// record of each consumer-group key handed to the group coordinator in log
// order (Options.ReloadConsumer), which replays them into its groups.

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/sluice/sluice/coordlog"
	"github.com/sluice/sluice/record"
)

// ConsumerRecord is one consumer group record: its key and its value, nil
// for a tombstone.
type ConsumerRecord struct {
	Key   ConsumerKey
	Value ConsumerValue
}

// PersistConsumer appends recs, records of consumer group name, as one
// batch with acks=all to the group's partition and returns once they are
// committed. Errors wrap coordlog.ErrNotCoordinator when this broker does
// not lead that partition, ErrTooLong when a string does not fit a record,
// ErrBadRecord for a record of another group or of no consumer type.
func (c *Coordinator) PersistConsumer(ctx context.Context, name string, recs []ConsumerRecord) error {
	if len(recs) == 0 {
		return nil
	}
	now := c.opts.Now().UnixMilli()
	out := make([]record.BuildRecord, 0, len(recs))
	for _, r := range recs {
		if r.Key.Group != name {
			return fmt.Errorf("%w: record of group %q persisted for group %q", ErrBadRecord, r.Key.Group, name)
		}
		k, err := AppendConsumerKey(nil, r.Key)
		if err != nil {
			return err
		}
		br := record.BuildRecord{Key: k, Timestamp: now}
		if r.Value != nil {
			if br.Value, err = r.Value.AppendTo(nil); err != nil {
				return err
			}
		}
		out = append(out, br)
	}
	p, err := c.leaderFor(name)
	if err != nil {
		return err
	}
	return coordlog.Append(ctx, p, out, commitTimeout, coordlog.ErrNotCoordinator)
}

// consumerEntry is the latest record of one consumer-group key in a replay
// and where it was: pos is its log offset.
type consumerEntry struct {
	rec ConsumerRecord
	pos int64
}

// applyConsumer keeps the record at offset pos as the latest of its key
// (what compaction would keep). Errors wrap ErrBadRecord.
func (v *view) applyConsumer(key, value []byte, pos int64) error {
	k, err := DecodeConsumerKey(key)
	if err != nil {
		return err
	}
	r := ConsumerRecord{Key: k}
	if value != nil {
		if r.Value, err = DecodeConsumerValue(k.Type, value); err != nil {
			return err
		}
	}
	m := v.consumer[k.Group]
	if m == nil {
		m = map[string]consumerEntry{}
		v.consumer[k.Group] = m
	}
	m[string(key)] = consumerEntry{rec: r, pos: pos}
	return nil
}

// consumerGroups returns, for each group match selects, the latest record
// of each of its keys in log order (tombstones included: the group
// coordinator's replay applies them).
func (v *view) consumerGroups(match func(string) bool) map[string][]ConsumerRecord {
	out := map[string][]ConsumerRecord{}
	for g, m := range v.consumer {
		if !match(g) {
			continue
		}
		es := make([]consumerEntry, 0, len(m))
		for _, e := range m {
			es = append(es, e)
		}
		slices.SortFunc(es, func(a, b consumerEntry) int { return cmp.Compare(a.pos, b.pos) })
		recs := make([]ConsumerRecord, len(es))
		for i, e := range es {
			recs[i] = e.rec
		}
		out[g] = recs
	}
	return out
}

// isConsumerKey reports whether a __consumer_offsets key is one of a
// consumer group record (its version is a consumer record type).
func isConsumerKey(key []byte) bool {
	return len(key) >= 2 && IsConsumerRecordType(int16(binary.BigEndian.Uint16(key)))
}
