package offsets

// The persistence of share groups (KIP-932) in __consumer_offsets, as that
// of consumer groups (consumerpersist.go): the records of shareformat.go
// appended through the offsets path (PersistShare), and, on load, the
// latest record of each share-group key handed to the group coordinator in
// log order (Options.ReloadShare).

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/sluice/sluice/coordlog"
	"github.com/sluice/sluice/record"
)

// ShareRecord is one share group record: its key and its value, nil for a
// tombstone.
type ShareRecord struct {
	Key   ShareKey
	Value ShareValue
}

// PersistShare appends recs, records of share group name, as one batch with
// acks=all to the group's partition and returns once they are committed.
// Errors as PersistConsumer's.
func (c *Coordinator) PersistShare(ctx context.Context, name string, recs []ShareRecord) error {
	if len(recs) == 0 {
		return nil
	}
	now := c.opts.Now().UnixMilli()
	out := make([]record.BuildRecord, 0, len(recs))
	for _, r := range recs {
		if r.Key.Group != name {
			return fmt.Errorf("%w: record of group %q persisted for group %q", ErrBadRecord, r.Key.Group, name)
		}
		k, err := AppendShareKey(nil, r.Key)
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

// shareEntry is the latest record of one share-group key in a replay and
// its log offset.
type shareEntry struct {
	rec ShareRecord
	pos int64
}

// applyShare keeps the record at offset pos as the latest of its key.
// Errors wrap ErrBadRecord.
func (v *view) applyShare(key, value []byte, pos int64) error {
	k, err := DecodeShareKey(key)
	if err != nil {
		return err
	}
	r := ShareRecord{Key: k}
	if value != nil {
		if r.Value, err = DecodeShareValue(k.Type, value); err != nil {
			return err
		}
	}
	if v.share == nil {
		v.share = map[string]map[string]shareEntry{}
	}
	m := v.share[k.Group]
	if m == nil {
		m = map[string]shareEntry{}
		v.share[k.Group] = m
	}
	m[string(key)] = shareEntry{rec: r, pos: pos}
	return nil
}

// shareGroups returns, for each share group match selects, the latest
// record of each of its keys in log order, tombstones included.
func (v *view) shareGroups(match func(string) bool) map[string][]ShareRecord {
	out := map[string][]ShareRecord{}
	for g, m := range v.share {
		if !match(g) {
			continue
		}
		es := make([]shareEntry, 0, len(m))
		for _, e := range m {
			es = append(es, e)
		}
		slices.SortFunc(es, func(a, b shareEntry) int { return cmp.Compare(a.pos, b.pos) })
		recs := make([]ShareRecord, len(es))
		for i, e := range es {
			recs[i] = e.rec
		}
		out[g] = recs
	}
	return out
}

// isShareKey reports whether a __consumer_offsets key is one of a share
// group record.
func isShareKey(key []byte) bool {
	return len(key) >= 2 && IsShareRecordType(int16(binary.BigEndian.Uint16(key)))
}
