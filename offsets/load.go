package offsets

import (
	"errors"

	"github.com/sluice/sluice/coordlog"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/replication"
)

// view is what a partition of __consumer_offsets holds: the latest record
// per key, nil for a tombstone.
type view struct {
	offsets map[string]map[metastore.TopicPartition]*metastore.CommittedOffset
	groups  map[string]*metastore.Group
}

func newView() *view {
	return &view{
		offsets: map[string]map[metastore.TopicPartition]*metastore.CommittedOffset{},
		groups:  map[string]*metastore.Group{},
	}
}

// replay reads p from its start up to end into a view: the latest offset
// per group and partition and the latest state of each group. The stats
// say what it read.
func replay(p *replication.Partition, end int64) (*view, coordlog.ReplayStats, error) {
	v := newView()
	st, err := coordlog.Replay(p, end, v.apply)
	if err != nil {
		return nil, st, err
	}
	return v, st, nil
}

// summary is what v holds, as slog key-value pairs for the load's log line
// (coordlog.Loaded.State): the distinct keys replayed (tombstoned ones
// included: what a compacted log keeps at least until the tombstones
// expire), the groups with metadata or a committed offset, and the
// committed offsets.
func (v *view) summary() []any {
	keys, groups, offsets := len(v.groups), 0, 0
	for g, m := range v.offsets {
		keys += len(m)
		live := 0
		for _, o := range m {
			if o != nil {
				live++
			}
		}
		offsets += live
		if live > 0 || v.groups[g] != nil {
			groups++
		}
	}
	for g, sg := range v.groups {
		if _, counted := v.offsets[g]; sg != nil && !counted {
			groups++
		}
	}
	return []any{"keys", keys, "groups", groups, "offsets", offsets}
}

// apply is the coordlog.ReplayFunc of a view: one record, later records
// replacing earlier ones of the same key. Errors wrap ErrBadRecord.
func (v *view) apply(_ int64, key, value []byte) error {
	k, isOffset, err := decodeOffsetKey(key)
	if err != nil {
		return err
	}
	if !isOffset {
		if value == nil {
			v.groups[k.Group] = nil
			return nil
		}
		sg, err := decodeGroupValue(k.Group, value)
		if err != nil {
			return err
		}
		v.groups[k.Group] = &sg
		return nil
	}
	m := v.offsets[k.Group]
	if m == nil {
		m = map[metastore.TopicPartition]*metastore.CommittedOffset{}
		v.offsets[k.Group] = m
	}
	tp := metastore.TopicPartition{Topic: k.Topic, Partition: k.Partition}
	if value == nil {
		m[tp] = nil
		return nil
	}
	o, err := decodeOffsetValue(value)
	if err != nil {
		return err
	}
	m[tp] = &o
	return nil
}

// materialize makes the metastore hold exactly v's state for the groups
// match selects: the replay is the whole truth for them, so what the
// metastore held from an earlier term is forgotten first. Groups match
// rejects are left alone.
func (v *view) materialize(meta *metastore.Store, match func(string) bool) error {
	names, err := meta.ListOffsetGroups()
	if err != nil {
		return err
	}
	saved, err := meta.ListGroups()
	if err != nil {
		return err
	}
	for _, sg := range saved {
		names = append(names, sg.Name)
	}
	for _, g := range names {
		if match(g) {
			if err := meta.DeleteGroup(g); err != nil && !errors.Is(err, metastore.ErrNotFound) {
				return err
			}
		}
	}
	for name, sg := range v.groups {
		if sg != nil && match(name) {
			if err := meta.PutGroup(*sg); err != nil {
				return err
			}
		}
	}
	for g, offs := range v.offsets {
		if !match(g) {
			continue
		}
		live := make(map[metastore.TopicPartition]metastore.CommittedOffset, len(offs))
		for tp, o := range offs {
			if o != nil {
				live[tp] = *o
			}
		}
		if err := meta.CommitOffsets(g, live); err != nil {
			return err
		}
	}
	return nil
}
