package offsets

// Upgrading a single node whose groups lived only in the metastore.
//
// The release before this one kept a single node's groups, committed
// offsets and pending transactional offsets in the metastore alone, with no
// __consumer_offsets topic. Now the topic is the truth on a single node too,
// and the metastore the view a load rebuilds from it: a load makes the
// metastore hold exactly what the log says (materialize), so the groups of
// such a data dir must be in the log before any partition is loaded.
//
// Migrate writes them there once, before the first load, flushes the
// topic's logs, and then records the checkpoint migratedCheckpoint. Crash
// safety: nothing is deleted from the metastore by the migration, no
// partition is loaded before the checkpoint is written, and the checkpoint
// is written only once the records are durable; a crash before it leaves
// the metastore as it was, and the next start migrates again from the
// start. Writing a group twice is harmless: a load keeps the latest record
// of each key, and the second copy equals the first.

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/replication"
)

// migratedCheckpoint names the metastore checkpoint recording that the
// metastore's groups were written to __consumer_offsets (its value is the
// number of groups written, as text, for the curious). Part of the on-disk
// format: do not change.
const migratedCheckpoint = "offsets.migrated-to-log"

// Migrate writes the groups, committed offsets and pending transactional
// offsets that the metastore holds to __consumer_offsets, once per data
// dir, and returns how many groups it wrote (0 when it ran before, or when
// there was nothing to write).
//
// REQUIRES: a single node, which leads every partition of the topic, and
// no partition of it loaded yet (a load would replace the metastore's
// groups with what the log holds). create makes the topic exist, opened
// here as leader of every partition, but not loaded; it is called only
// when there is something to write. Errors are the metastore's, create's
// and the appends'; the migration is then not recorded, and is safe to
// run again.
func (c *Coordinator) Migrate(ctx context.Context, create func(context.Context) error) (int, error) {
	meta := c.opts.Meta
	if _, err := meta.GetCheckpoint(migratedCheckpoint); err == nil {
		return 0, nil
	} else if !errors.Is(err, metastore.ErrNotFound) {
		return 0, fmt.Errorf("offsets: migrate: %w", err)
	}
	names, saved, err := metastoreGroups(meta)
	if err != nil {
		return 0, fmt.Errorf("offsets: migrate: %w", err)
	}
	if len(names) > 0 {
		if err := create(ctx); err != nil {
			return 0, fmt.Errorf("offsets: migrate: create %s: %w", Topic, err)
		}
		if err := c.learnSequences(); err != nil {
			return 0, fmt.Errorf("offsets: migrate: %w", err)
		}
	}
	for _, name := range names {
		if err := c.migrateGroup(ctx, name, saved[name]); err != nil {
			return 0, fmt.Errorf("offsets: migrate group %q: %w", name, err)
		}
	}
	if len(names) > 0 {
		if err := c.flushAll(); err != nil {
			return 0, fmt.Errorf("offsets: migrate: %w", err)
		}
	}
	if err := meta.PutCheckpoint(migratedCheckpoint, fmt.Appendf(nil, "%d", len(names))); err != nil {
		return 0, fmt.Errorf("offsets: migrate: record the migration: %w", err)
	}
	if len(names) > 0 {
		c.opts.Logger.Info("offsets: wrote the metastore's groups to "+Topic, "groups", len(names))
	}
	return len(names), nil
}

// learnSequences reads the producer sequences of partitions that already
// hold records (a migration that crashed after writing some), so the
// transactional batches written again carry the sequences their producers'
// state in the log expects.
func (c *Coordinator) learnSequences() error {
	n := c.opts.NumPartitions()
	for i := int32(0); i < n; i++ {
		p := c.opts.Partition(i)
		if p == nil {
			return fmt.Errorf("no local replica of %s-%d", Topic, i)
		}
		if p.LogEndOffset() == 0 {
			continue
		}
		v, _, err := replay(p, p.LogEndOffset())
		if err != nil {
			return err
		}
		c.seqs.reset(i, v.seqs)
	}
	return nil
}

// flushAll makes what the migration appended durable before the
// checkpoint records it: an acknowledged append may still be in the page
// cache only (the topic's flush policy), and a power loss that kept the
// checkpoint but lost the records would let the first load wipe the
// metastore's groups.
func (c *Coordinator) flushAll() error {
	n := c.opts.NumPartitions()
	for i := int32(0); i < n; i++ {
		p := c.opts.Partition(i)
		if p == nil {
			return fmt.Errorf("no local replica of %s-%d", Topic, i)
		}
		if err := p.Log().Flush(); err != nil {
			return fmt.Errorf("flush %s-%d: %w", Topic, i, err)
		}
	}
	return nil
}

// metastoreGroups returns the names of every group the metastore holds
// anything of (saved state, committed or pending offsets), sorted, and the
// saved states by name.
func metastoreGroups(meta *metastore.Store) ([]string, map[string]*metastore.Group, error) {
	all, err := meta.ListGroups()
	if err != nil {
		return nil, nil, err
	}
	saved := make(map[string]*metastore.Group, len(all))
	seen := map[string]bool{}
	for i := range all {
		saved[all[i].Name] = &all[i]
		seen[all[i].Name] = true
	}
	withOffsets, err := meta.ListOffsetGroups()
	if err != nil {
		return nil, nil, err
	}
	withPending, err := meta.ListPendingTxnGroups()
	if err != nil {
		return nil, nil, err
	}
	for _, n := range append(withOffsets, withPending...) {
		seen[n] = true
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, saved, nil
}

// migrateGroup appends group name's saved state (sg, nil when none), its
// committed offsets and, as transactional batches of their producers, its
// pending offsets that no later offset superseded (a superseded one would
// change nothing when its transaction commits), in that order, so a load
// sees the pending offsets after the committed ones they follow.
func (c *Coordinator) migrateGroup(ctx context.Context, name string, sg *metastore.Group) error {
	meta := c.opts.Meta
	if sg != nil {
		if err := c.PersistGroup(ctx, *sg, false); err != nil {
			return err
		}
	}
	offs, err := meta.FetchOffsets(name)
	if err != nil {
		return err
	}
	if len(offs) > 0 {
		if err := c.Persist(ctx, name, offs, nil); err != nil {
			return err
		}
	}
	pending, err := meta.FetchPendingTxnOffsets(name)
	if err != nil {
		return err
	}
	type producer struct {
		id    int64
		epoch int16
	}
	byProducer := map[producer]map[metastore.TopicPartition]metastore.CommittedOffset{}
	var order []producer
	sort.Slice(pending, func(i, j int) bool { return pending[i].Position < pending[j].Position })
	for _, p := range pending {
		if p.Superseded {
			continue
		}
		k := producer{p.ProducerID, p.ProducerEpoch}
		if byProducer[k] == nil {
			byProducer[k] = map[metastore.TopicPartition]metastore.CommittedOffset{}
			order = append(order, k)
		}
		byProducer[k][p.TopicPartition] = p.Offset
	}
	for _, k := range order {
		_, err := c.PersistTxn(ctx, name, k.id, k.epoch, byProducer[k])
		if errors.Is(err, replication.ErrInvalidProducerEpoch) {
			// The log already knows a newer epoch of this producer (its
			// offsets in another group were written first): these are a
			// fenced zombie's, which its transaction's marker would drop.
			c.opts.Logger.Warn("offsets: migrate: dropped the pending offsets of a fenced producer epoch",
				"group", name, "producer", k.id, "epoch", k.epoch)
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Loading is group.Options.Loading: whether some partition led here is
// still loading (coordlog.Partitions.Loading).
func (c *Coordinator) Loading() bool { return c.parts.Loading() }

// WaitLoaded waits until partition i, led here, is loaded: see
// coordlog.Partitions.WaitLoaded.
func (c *Coordinator) WaitLoaded(ctx context.Context, i int32) error {
	return c.parts.WaitLoaded(ctx, i)
}
