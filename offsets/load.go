package offsets

import (
	"errors"
	"fmt"

	"github.com/sluice/sluice/coordlog"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replication"
)

// view is what a partition of __consumer_offsets holds: the latest record
// per key, nil for a tombstone, and the transactional offsets still
// pending at the end of the replay.
type view struct {
	offsets map[string]map[metastore.TopicPartition]*metastore.CommittedOffset
	// pos[g][tp] is the log position (batch base offset) of the record
	// behind offsets[g][tp], tombstones included.
	pos    map[string]map[metastore.TopicPartition]int64
	groups map[string]*metastore.Group
	// pending holds, per producer id, the offsets of its open transaction.
	pending map[int64]map[groupTP]pendingRec
	// seqs is the next sequence of each producer (txn.go).
	seqs map[int64]seqState
	// consumer holds, per consumer group, the latest record of each
	// consumer-group key (types 3-8 and 16), by encoded key
	// (consumerpersist.go).
	consumer latestRecords[ConsumerRecord]
	// share holds, per share group, the latest record of each share-group
	// key (types 9-15), by encoded key (sharepersist.go).
	share latestRecords[ShareRecord]
}

// groupTP names a group's partition.
type groupTP struct {
	group string
	tp    metastore.TopicPartition
}

// pendingRec is a transactional offset record not yet ended by a marker.
type pendingRec struct {
	o     metastore.CommittedOffset
	epoch int16
	pos   int64
}

func newView() *view {
	return &view{
		offsets: map[string]map[metastore.TopicPartition]*metastore.CommittedOffset{},
		pos:     map[string]map[metastore.TopicPartition]int64{},
		groups:  map[string]*metastore.Group{},
		pending: map[int64]map[groupTP]pendingRec{},
		seqs:    map[int64]seqState{},

		consumer: latestRecords[ConsumerRecord]{},
	}
}

// replay reads p from its start up to end into a view: the latest offset
// per group and partition, the latest state of each group and the pending
// transactional offsets. The stats say what it read.
func replay(p *replication.Partition, end int64) (*view, coordlog.ReplayStats, error) {
	v := newView()
	var it record.Iter
	var st coordlog.ReplayStats
	err := coordlog.ReplayBatches(p, end, func(b record.Batch) error {
		st.Bytes += int64(b.Size())
		learn(v.seqs, b)
		if !b.Control() {
			st.Batches++
		}
		it.Reset(b)
		for it.Next() {
			if it.Offset() >= end {
				break
			}
			r := it.Record()
			var err error
			if b.Control() {
				err = v.applyControl(b.ProducerID(), r.Key)
			} else if isShareKey(r.Key) {
				st.Records++
				err = v.applyShare(r.Key, r.Value, it.Offset())
			} else if isConsumerKey(r.Key) {
				// Consumer group records (KIP-848) go to the consumer
				// group coordinator, not the metastore.
				st.Records++
				err = v.applyConsumer(r.Key, r.Value, it.Offset())
			} else {
				st.Records++
				err = v.apply(b, r.Key, r.Value)
			}
			if err != nil {
				return fmt.Errorf("offset %d: %w", it.Offset(), err)
			}
		}
		return it.Err()
	})
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

// applyControl ends producer pid's transaction at its marker: a COMMIT
// applies each pending offset whose record comes after the current one of
// its key (Kafka's olderThan), an ABORT drops them. Errors wrap
// ErrBadRecord.
func (v *view) applyControl(pid int64, key []byte) error {
	typ, err := parseControlKey(key)
	if err != nil {
		return err
	}
	pend := v.pending[pid]
	delete(v.pending, pid)
	if typ != controlCommit {
		return nil // ABORT; other types (KIP-890's) end nothing here
	}
	for k, r := range pend {
		if cur, ok := v.pos[k.group][k.tp]; ok && v.offsets[k.group][k.tp] != nil && cur >= r.pos {
			continue
		}
		o := r.o
		v.set(k.group, k.tp, &o, r.pos)
	}
	return nil
}

// set makes o (nil: a tombstone) the current offset of group's tp,
// written at position pos.
func (v *view) set(group string, tp metastore.TopicPartition, o *metastore.CommittedOffset, pos int64) {
	m := v.offsets[group]
	if m == nil {
		m = map[metastore.TopicPartition]*metastore.CommittedOffset{}
		v.offsets[group] = m
		v.pos[group] = map[metastore.TopicPartition]int64{}
	}
	m[tp] = o
	v.pos[group][tp] = pos
}

// apply is one record of data batch b, later records replacing earlier
// ones of the same key; in a transactional batch, an offset record is
// pending for the batch's producer. Errors wrap ErrBadRecord.
func (v *view) apply(b record.Batch, key, value []byte) error {
	k, isOffset, err := decodeOffsetKey(key)
	if err != nil {
		return err
	}
	if !isOffset {
		if value == nil {
			// A deleted group takes its pending transactional offsets
			// along (the coordinator dropped them with the group), so a
			// later COMMIT marker does not bring the group back.
			v.groups[k.Group] = nil
			v.dropPending(k.Group)
			return nil
		}
		sg, err := decodeGroupValue(k.Group, value)
		if err != nil {
			return err
		}
		v.groups[k.Group] = &sg
		return nil
	}
	tp := metastore.TopicPartition{Topic: k.Topic, Partition: k.Partition}
	var o *metastore.CommittedOffset
	if value != nil {
		d, err := decodeOffsetValue(value)
		if err != nil {
			return err
		}
		o = &d
	}
	if b.Transactional() && b.ProducerID() >= 0 {
		pend := v.pending[b.ProducerID()]
		if pend == nil {
			pend = map[groupTP]pendingRec{}
			v.pending[b.ProducerID()] = pend
		}
		gk := groupTP{group: k.Group, tp: tp}
		if o == nil {
			delete(pend, gk)
		} else {
			pend[gk] = pendingRec{o: *o, epoch: b.ProducerEpoch(), pos: b.BaseOffset()}
		}
		return nil
	}
	v.set(k.Group, tp, o, b.BaseOffset())
	return nil
}

// dropPending forgets group's pending transactional offsets, of every
// producer.
func (v *view) dropPending(group string) {
	for pid, pend := range v.pending {
		for k := range pend {
			if k.group == group {
				delete(pend, k)
			}
		}
		if len(pend) == 0 {
			delete(v.pending, pid)
		}
	}
}

// pendingOf returns group's pending offsets for the metastore, each
// Superseded when a record of its key after it was applied.
func (v *view) pendingOf(group string) []metastore.PendingTxnOffset {
	var out []metastore.PendingTxnOffset
	for pid, pend := range v.pending {
		for k, r := range pend {
			if k.group != group {
				continue
			}
			cur, ok := v.pos[group][k.tp]
			ok = ok && v.offsets[group][k.tp] != nil // a tombstone supersedes nothing
			out = append(out, metastore.PendingTxnOffset{
				ProducerID: pid, ProducerEpoch: r.epoch, TopicPartition: k.tp,
				Offset: r.o, Position: r.pos, Superseded: ok && cur > r.pos,
			})
		}
	}
	return out
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
	pendingNames, err := meta.ListPendingTxnGroups()
	if err != nil {
		return err
	}
	names = append(names, pendingNames...)
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
	pendingGroups := map[string]bool{}
	for _, pend := range v.pending {
		for k := range pend {
			pendingGroups[k.group] = true
		}
	}
	for g := range pendingGroups {
		if !match(g) {
			continue
		}
		if err := meta.UpdateOffsets(g, metastore.OffsetsUpdate{PutPending: v.pendingOf(g)}); err != nil {
			return err
		}
	}
	return nil
}
