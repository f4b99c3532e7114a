package server

// Consumer offsets in cluster mode: the internal, replicated
// __consumer_offsets topic (issue 6, item 4), as Kafka's
// GroupMetadataManager.
//
//   - The coordinator of a group is the leader of partition
//     offsetsPartitionFor(group, n) of __consumer_offsets. FindCoordinator
//     answers that leader from the metadata cache, creating the topic on
//     the first request (offsets.topic.num.partitions partitions,
//     offsets.topic.replication.factor replicas; until enough brokers live
//     to create it, COORDINATOR_NOT_AVAILABLE).
//   - An OffsetCommit is appended to that partition with acks=all and
//     answered only once the high watermark passes it (group.Options.Persist);
//     then the metastore materializes it.
//   - When this broker becomes leader of a partition (LeaderAndIsr), it
//     loads it: replays the log from its start to the log end it had when it
//     became leader into the metastore (latest record per key, tombstones
//     delete) and reloads those groups into the coordinator; until then
//     their requests get COORDINATOR_LOAD_IN_PROGRESS. When it stops
//     leading, the groups are unloaded (NOT_COORDINATOR).
//
// Group metadata records (a completed rebalance, a group turning Empty or
// deleted) go the same way (group.Options.PersistGroup), so a new
// coordinator knows the members and their generation. The topic has retention.ms=-1 (no compaction in Sluice, so it only grows).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluice/sluice/cluster"
	"github.com/sluice/sluice/group"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replication"
)

// offsetsTopic is Kafka's internal offsets topic.
const offsetsTopic = "__consumer_offsets"

// offsetsCommitTimeout is offsets.commit.timeout.ms: how long a commit
// waits for the in-sync replicas.
const offsetsCommitTimeout = 5 * time.Second

// offsetsLoadReadBytes is the read size while loading a partition.
const offsetsLoadReadBytes = 1 << 20

// offsetsCoord tracks which __consumer_offsets partitions this broker
// leads and has loaded. Safe for concurrent use.
type offsetsCoord struct {
	s *Server

	mu sync.Mutex
	// parts holds the partitions this broker leads: loading until the
	// replay ends. gen changes with every transition, so a load that lost
	// its leadership meanwhile does not mark the partition loaded.
	parts map[int32]*offsetsPart
	gen   uint64
}

type offsetsPart struct {
	loading bool
	gen     uint64
}

func newOffsetsCoord(s *Server) *offsetsCoord {
	return &offsetsCoord{s: s, parts: map[int32]*offsetsPart{}}
}

// numPartitions is the partition count of the local __consumer_offsets
// (0 when this broker has no replica of it).
func (oc *offsetsCoord) numPartitions() int32 {
	if t := oc.s.topics.get(offsetsTopic); t != nil {
		return int32(len(t.parts))
	}
	return 0
}

// owns is group.Options.Owns.
func (oc *offsetsCoord) owns(name string) (owned, loading bool) {
	n := oc.numPartitions()
	if n == 0 {
		return false, false
	}
	i := offsetsPartitionFor(name, n)
	oc.mu.Lock()
	defer oc.mu.Unlock()
	p := oc.parts[i]
	if p == nil {
		return false, false
	}
	return true, p.loading
}

// matcher matches the groups stored in partition i.
func (oc *offsetsCoord) matcher(i, n int32) func(string) bool {
	return func(g string) bool { return offsetsPartitionFor(g, n) == i }
}

// persist is group.Options.Persist: one batch of offset records (and
// tombstones) appended with acks=all to the group's partition.
func (oc *offsetsCoord) persist(ctx context.Context, name string, offsets map[metastore.TopicPartition]metastore.CommittedOffset, deleted []metastore.TopicPartition) error {
	n := oc.numPartitions()
	if n == 0 {
		return fmt.Errorf("%w: no local %s", group.ErrNotCoordinator, offsetsTopic)
	}
	i := offsetsPartitionFor(name, n)
	p := oc.s.partition(offsetsTopic, i)
	if p == nil || !p.IsLeader() {
		return fmt.Errorf("%w: not the leader of %s-%d", group.ErrNotCoordinator, offsetsTopic, i)
	}
	return oc.appendTo(ctx, p.Partition, name, offsets, deleted)
}

// persistGroup is group.Options.PersistGroup: one group metadata record
// (a tombstone when deleted) appended with acks=all.
func (oc *offsetsCoord) persistGroup(ctx context.Context, sg metastore.Group, deleted bool) error {
	n := oc.numPartitions()
	if n == 0 {
		return fmt.Errorf("%w: no local %s", group.ErrNotCoordinator, offsetsTopic)
	}
	i := offsetsPartitionFor(sg.Name, n)
	p := oc.s.partition(offsetsTopic, i)
	if p == nil || !p.IsLeader() {
		return fmt.Errorf("%w: not the leader of %s-%d", group.ErrNotCoordinator, offsetsTopic, i)
	}
	rec := record.BuildRecord{Key: appendGroupKey(nil, sg.Name), Timestamp: oc.s.now().UnixMilli()}
	if !deleted {
		rec.Value = appendGroupValue(nil, sg)
	}
	return oc.appendRecords(ctx, p.Partition, []record.BuildRecord{rec})
}

// appendTo appends one batch of offset records and tombstones of group
// name to p with acks=all and waits until it is committed.
func (oc *offsetsCoord) appendTo(ctx context.Context, p *replication.Partition, name string, offsets map[metastore.TopicPartition]metastore.CommittedOffset, deleted []metastore.TopicPartition) error {
	now := oc.s.now().UnixMilli()
	recs := make([]record.BuildRecord, 0, len(offsets)+len(deleted))
	for tp, o := range offsets {
		k := appendOffsetKey(nil, offsetKey{Group: name, Topic: tp.Topic, Partition: tp.Partition})
		recs = append(recs, record.BuildRecord{Key: k, Value: appendOffsetValue(nil, o), Timestamp: now})
	}
	for _, tp := range deleted {
		k := appendOffsetKey(nil, offsetKey{Group: name, Topic: tp.Topic, Partition: tp.Partition})
		recs = append(recs, record.BuildRecord{Key: k, Timestamp: now})
	}
	return oc.appendRecords(ctx, p, recs)
}

// appendRecords appends recs as one batch to p with acks=all and waits
// until it is committed (at most offsetsCommitTimeout).
func (oc *offsetsCoord) appendRecords(ctx context.Context, p *replication.Partition, recs []record.BuildRecord) error {
	batch := record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	ctx, cancel := context.WithTimeout(ctx, offsetsCommitTimeout)
	defer cancel()
	if _, err := p.Append(ctx, batch, -1); err != nil {
		if errors.Is(err, replication.ErrNotLeader) || errors.Is(err, replication.ErrClosed) {
			return fmt.Errorf("%w: %s-%d: %v", group.ErrNotCoordinator, offsetsTopic, p.Index(), err)
		}
		return fmt.Errorf("server: append to %s-%d: %w", offsetsTopic, p.Index(), err)
	}
	return nil
}

// onRole is called after LeaderAndIsr applied a state to partition i of
// __consumer_offsets: leading starts a load, following unloads (at once,
// so no request of those groups is served past the leadership change).
func (oc *offsetsCoord) onRole(i int32, leader bool) {
	oc.mu.Lock()
	cur := oc.parts[i]
	switch {
	case !leader && cur == nil, leader && cur != nil:
		// Nothing changes (a new epoch or ISR of the same role).
		oc.mu.Unlock()
		return
	case !leader:
		delete(oc.parts, i)
		oc.gen++
		oc.mu.Unlock()
		if n := oc.numPartitions(); n > 0 {
			oc.s.groups.Unload(oc.matcher(i, n))
		}
		oc.s.log.Info("server: unloaded consumer offsets partition", "partition", i)
		return
	}
	oc.gen++
	gen := oc.gen
	oc.parts[i] = &offsetsPart{loading: true, gen: gen}
	oc.mu.Unlock()
	go oc.load(i, gen)
}

// load replays partition i into the metastore and the coordinator.
func (oc *offsetsCoord) load(i int32, gen uint64) {
	start := time.Now()
	for attempt := 0; ; attempt++ {
		err := oc.loadOnce(i)
		if err == nil {
			break
		}
		oc.s.log.Warn("server: load consumer offsets partition", "partition", i, "attempt", attempt, "err", err)
		select {
		case <-oc.s.closing:
			return
		case <-time.After(time.Second):
		}
		oc.mu.Lock()
		stale := oc.parts[i] == nil || oc.parts[i].gen != gen
		oc.mu.Unlock()
		if stale {
			return
		}
	}
	oc.mu.Lock()
	defer oc.mu.Unlock()
	if p := oc.parts[i]; p != nil && p.gen == gen {
		p.loading = false
		oc.s.log.Info("server: loaded consumer offsets partition", "partition", i, "took", time.Since(start))
	}
}

// loadOnce is one attempt of load.
func (oc *offsetsCoord) loadOnce(i int32) error {
	p := oc.s.partition(offsetsTopic, i)
	n := oc.numPartitions()
	if p == nil || n == 0 {
		return fmt.Errorf("server: no local replica of %s-%d", offsetsTopic, i)
	}
	rp, err := replayOffsets(p.Partition, p.LogEndOffset())
	if err != nil {
		return err
	}
	latest := rp.offsets
	match := oc.matcher(i, n)
	meta := oc.s.meta
	// The replay is the whole truth for these groups: forget what the
	// metastore held from an earlier term.
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
	for name, sg := range rp.groups {
		if sg != nil && match(name) {
			if err := meta.PutGroup(*sg); err != nil {
				return err
			}
		}
	}
	for g, offs := range latest {
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
	return oc.s.groups.Reload(match)
}

// offsetsReplay is what a partition of __consumer_offsets holds: the latest
// record per key, nil for a tombstone.
type offsetsReplay struct {
	offsets map[string]map[metastore.TopicPartition]*metastore.CommittedOffset
	groups  map[string]*metastore.Group
}

// replayOffsets reads p from its start up to end and returns the latest
// offset per group and partition and the latest state of each group.
func replayOffsets(p *replication.Partition, end int64) (*offsetsReplay, error) {
	rp := &offsetsReplay{
		offsets: map[string]map[metastore.TopicPartition]*metastore.CommittedOffset{},
		groups:  map[string]*metastore.Group{},
	}
	out := rp.offsets
	var buf []byte
	var it record.Iter
	for off := p.LogStartOffset(); off < end; {
		sl, err := p.ReadReplica(off, offsetsLoadReadBytes)
		if err != nil {
			return nil, fmt.Errorf("server: read %s-%d at %d: %w", offsetsTopic, p.Index(), off, err)
		}
		buf, err = sl.AppendTo(buf[:0])
		sl.Release()
		if err != nil {
			return nil, fmt.Errorf("server: read %s-%d at %d: %w", offsetsTopic, p.Index(), off, err)
		}
		if len(buf) == 0 {
			break
		}
		progressed := false
		for b := buf; ; {
			size, ok := record.PeekSize(b)
			if !ok || size > len(b) {
				break
			}
			batch := record.Batch(b[:size])
			b = b[size:]
			if batch.NextOffset() <= off {
				continue
			}
			progressed = true
			off = batch.NextOffset()
			if batch.Control() {
				continue
			}
			it.Reset(batch)
			for it.Next() {
				if it.Offset() >= end {
					break
				}
				r := it.Record()
				k, isOffset, err := decodeOffsetKey(r.Key)
				if err != nil {
					return nil, fmt.Errorf("server: %s-%d offset %d: %w", offsetsTopic, p.Index(), it.Offset(), err)
				}
				if !isOffset {
					if r.Value == nil {
						rp.groups[k.Group] = nil
						continue
					}
					sg, err := decodeGroupValue(k.Group, r.Value)
					if err != nil {
						return nil, fmt.Errorf("server: %s-%d offset %d: %w", offsetsTopic, p.Index(), it.Offset(), err)
					}
					rp.groups[k.Group] = &sg
					continue
				}
				m := out[k.Group]
				if m == nil {
					m = map[metastore.TopicPartition]*metastore.CommittedOffset{}
					out[k.Group] = m
				}
				tp := metastore.TopicPartition{Topic: k.Topic, Partition: k.Partition}
				if r.Value == nil {
					m[tp] = nil
					continue
				}
				o, err := decodeOffsetValue(r.Value)
				if err != nil {
					return nil, fmt.Errorf("server: %s-%d offset %d: %w", offsetsTopic, p.Index(), it.Offset(), err)
				}
				m[tp] = &o
			}
			if err := it.Err(); err != nil {
				return nil, fmt.Errorf("server: %s-%d: %w", offsetsTopic, p.Index(), err)
			}
		}
		if !progressed {
			return nil, fmt.Errorf("server: %s-%d: no whole batch at %d", offsetsTopic, p.Index(), off)
		}
	}
	return rp, nil
}

// createOffsetsTopic creates __consumer_offsets through the cluster. It
// returns nil when the topic exists already.
func (oc *offsetsCoord) createOffsetsTopic(ctx context.Context, node *cluster.Node) error {
	cfg := oc.s.cfg
	err := node.CreateTopic(ctx, offsetsTopic, int(cfg.OffsetsTopicPartitions), int(cfg.OffsetsTopicReplication),
		offsetsTopicConfigs(), [16]byte{})
	if errors.Is(err, cluster.ErrTopicExists) {
		return nil
	}
	return err
}

// onStop is called when the replica of partition i is stopped: its groups
// are unloaded.
func (oc *offsetsCoord) onStop(i int32) { oc.onRole(i, false) }
