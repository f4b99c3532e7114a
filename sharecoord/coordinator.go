package sharecoord

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sluice/sluice/coordlog"
	"github.com/sluice/sluice/group/share"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replication"
)

// Topic is the share coordinator's internal topic.
const Topic = "__share_group_state"

// DefaultPartitions is share.coordinator.state.topic.num.partitions'
// default.
const DefaultPartitions = 50

// TopicConfigs are __share_group_state's topic configs. Sluice compacts it
// (the latest ShareSnapshot and ShareUpdate per share partition survive),
// where Kafka deletes and prunes it with DeleteRecords
// (share.coordinator.state.topic.prune.interval.ms): replay is the same.
func TopicConfigs(minISR int) map[string]string {
	return map[string]string{
		"cleanup.policy":      "compact",
		"compression.type":    "uncompressed",
		"min.insync.replicas": strconv.Itoa(minISR),
		"segment.bytes":       strconv.Itoa(100 << 20),
	}
}

// ErrNotCoordinator: the share partition's state lives on a
// __share_group_state partition this broker does not lead (NOT_COORDINATOR).
var ErrNotCoordinator = coordlog.ErrNotCoordinator

// Options configures New.
type Options struct {
	// NumPartitions is the current number of __share_group_state
	// partitions (0: the topic does not exist yet).
	NumPartitions func() int32
	// Partition is the local replica of partition i, nil when none.
	Partition func(i int32) *replication.Partition
	// AppendTimeout bounds a write (0: 5s).
	AppendTimeout time.Duration
	Now           func() time.Time
	Logger        *slog.Logger
}

// entry is one share partition's persisted state.
type entry struct {
	snap          share.Snapshot
	snapshotEpoch int32
	createTime    int64
	part          int32 // the __share_group_state partition holding it
}

// Coordinator keeps the persisted state of the share partitions whose
// __share_group_state partitions this broker leads. Safe for concurrent
// use.
type Coordinator struct {
	opts  Options
	parts *coordlog.Partitions

	mu     sync.Mutex
	states map[share.Key]*entry
}

// New returns a coordinator that leads nothing yet (OnRole).
func New(opts Options) *Coordinator {
	if opts.AppendTimeout <= 0 {
		opts.AppendTimeout = 5 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Coordinator{opts: opts, states: map[share.Key]*entry{}}
	c.parts = coordlog.New(coordlog.Options{Topic: Topic, Load: c.load, Unload: c.unload, Logger: opts.Logger})
	return c
}

// OnRole records that this broker became (leader) or stopped being the
// leader of partition i; becoming leader loads it.
func (c *Coordinator) OnRole(i int32, leader bool) { c.parts.OnRole(i, leader) }

// Close stops loads.
func (c *Coordinator) Close() { c.parts.Close() }

// CoordinatorKey is Kafka's SharePartitionKey.asCoordinatorKey:
// "group:topicId:partition", the topic id in Kafka's base64 form.
func CoordinatorKey(k share.Key) string {
	return k.Group + ":" + base64.RawURLEncoding.EncodeToString(k.Topic[:]) + ":" + strconv.Itoa(int(k.Partition))
}

// partitionFor is k's __share_group_state partition, -1 without the topic.
func (c *Coordinator) partitionFor(k share.Key) int32 {
	n := c.opts.NumPartitions()
	if n <= 0 {
		return -1
	}
	return coordlog.PartitionFor(CoordinatorKey(k), n)
}

// Read returns k's persisted state, waiting for its partition's load.
// ok is false when none was written (or it was deleted). Errors:
// ErrNotCoordinator when this broker does not lead k's partition, ctx's.
func (c *Coordinator) Read(ctx context.Context, k share.Key) (share.Snapshot, bool, error) {
	i := c.partitionFor(k)
	if i < 0 {
		return share.Snapshot{}, false, nil // no topic: nothing was ever written
	}
	if err := c.parts.WaitLoaded(ctx, i); err != nil {
		return share.Snapshot{}, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.states[k]
	if e == nil {
		return share.Snapshot{}, false, nil
	}
	return e.snap, true, nil
}

// Write persists k's state as a ShareSnapshot with acks=all and returns once
// it is committed. The caller serializes writes of one key (a later call
// must carry the later state).
func (c *Coordinator) Write(ctx context.Context, k share.Key, snap share.Snapshot, leaderEpoch int32) error {
	i := c.partitionFor(k)
	if i < 0 {
		return fmt.Errorf("%w: %s does not exist", ErrNotCoordinator, Topic)
	}
	if owned, loading := c.parts.State(i); !owned {
		return fmt.Errorf("%w: %s-%d", ErrNotCoordinator, Topic, i)
	} else if loading {
		if err := c.parts.WaitLoaded(ctx, i); err != nil {
			return err
		}
	}
	p := c.opts.Partition(i)
	if p == nil {
		return fmt.Errorf("%w: no replica of %s-%d", ErrNotCoordinator, Topic, i)
	}
	now := c.opts.Now().UnixMilli()
	c.mu.Lock()
	prev := c.states[k]
	v := Value{StateEpoch: snap.StateEpoch, LeaderEpoch: leaderEpoch, StartOffset: snap.StartOffset,
		CreateTime: now, WriteTime: now, Batches: snap.Batches}
	if prev != nil {
		v.SnapshotEpoch, v.CreateTime = prev.snapshotEpoch+1, prev.createTime
	}
	c.mu.Unlock()
	rec := record.BuildRecord{
		Key:       AppendKey(nil, TypeSnapshot, k),
		Value:     AppendSnapshotValue(nil, v),
		Timestamp: now,
	}
	if err := coordlog.Append(ctx, p, []record.BuildRecord{rec}, c.opts.AppendTimeout, ErrNotCoordinator); err != nil {
		return err
	}
	c.mu.Lock()
	c.states[k] = &entry{snap: cloneSnapshot(snap), snapshotEpoch: v.SnapshotEpoch, createTime: v.CreateTime, part: i}
	c.mu.Unlock()
	return nil
}

func cloneSnapshot(s share.Snapshot) share.Snapshot {
	s.Batches = slices.Clone(s.Batches)
	return s
}

// load is coordlog.Options.Load: replay partition i into the states.
func (c *Coordinator) load(i int32, current func() bool) (coordlog.Loaded, error) {
	p := c.opts.Partition(i)
	if p == nil {
		return coordlog.Loaded{}, fmt.Errorf("sharecoord: no local replica of %s-%d", Topic, i)
	}
	loaded := map[share.Key]*entry{}
	st, err := coordlog.Replay(p, p.LogEndOffset(), func(off int64, key, value []byte) error {
		typ, k, err := DecodeKey(key)
		if err != nil {
			c.logSkip(i, off, err)
			return nil
		}
		if value == nil {
			delete(loaded, k)
			return nil
		}
		v, err := DecodeValue(typ, value)
		if err != nil {
			c.logSkip(i, off, err)
			return nil
		}
		apply(loaded, typ, k, v, i)
		return nil
	})
	if err != nil {
		return coordlog.Loaded{Replay: st}, err
	}
	if !current() {
		return coordlog.Loaded{}, coordlog.ErrStale
	}
	c.mu.Lock()
	for k, e := range c.states {
		if e.part == i {
			delete(c.states, k)
		}
	}
	for k, e := range loaded {
		c.states[k] = e
	}
	c.mu.Unlock()
	return coordlog.Loaded{Replay: st, State: []any{"share_partitions", len(loaded)}}, nil
}

func (c *Coordinator) logSkip(i int32, off int64, err error) {
	if c.opts.Logger != nil {
		c.opts.Logger.Warn("sharecoord: skipped an undecodable record", "partition", i, "offset", off, "err", err)
	}
}

// apply replays one record into states: a snapshot replaces the state, an
// update merges into it (Kafka's ShareCoordinatorShard.replay): its batches
// override the offsets they name, its start offset (unless -1) moves the
// start and drops what lies below it.
func apply(states map[share.Key]*entry, typ int16, k share.Key, v Value, part int32) {
	if typ == TypeSnapshot {
		states[k] = &entry{
			snap:          share.Snapshot{StateEpoch: v.StateEpoch, StartOffset: v.StartOffset, Batches: v.Batches},
			snapshotEpoch: v.SnapshotEpoch, createTime: v.CreateTime, part: part,
		}
		return
	}
	e := states[k]
	if e == nil {
		// An update without a snapshot before it (compacted away, or
		// written by a coordinator that starts from updates): its own
		// state.
		start := max(v.StartOffset, 0)
		e = &entry{snap: share.Snapshot{StartOffset: start}, part: part}
		states[k] = e
	}
	if v.StartOffset >= 0 {
		e.snap.StartOffset = v.StartOffset
	}
	e.snap.Batches = MergeBatches(e.snap.Batches, v.Batches, e.snap.StartOffset)
	e.snapshotEpoch = v.SnapshotEpoch
}

// MergeBatches returns old with the offsets that upd names replaced by
// upd's, sorted, without anything below start. Its cost is bounded by the
// number of batches, never by the ranges they cover.
func MergeBatches(old, upd []share.StateBatch, start int64) []share.StateBatch {
	var out []share.StateBatch
	for _, o := range old {
		pieces := []share.StateBatch{o}
		for _, u := range upd {
			var next []share.StateBatch
			for _, p := range pieces {
				if u.Last < p.First || u.First > p.Last || u.First > u.Last {
					next = append(next, p)
					continue
				}
				if p.First < u.First {
					q := p
					q.Last = u.First - 1
					next = append(next, q)
				}
				if p.Last > u.Last {
					q := p
					q.First = u.Last + 1
					next = append(next, q)
				}
			}
			pieces = next
		}
		out = append(out, pieces...)
	}
	for _, u := range upd {
		if u.First <= u.Last {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b share.StateBatch) int {
		switch {
		case a.First < b.First:
			return -1
		case a.First > b.First:
			return 1
		}
		return 0
	})
	clipped := out[:0]
	for _, b := range out {
		if b.Last < start {
			continue
		}
		b.First = max(b.First, start)
		clipped = append(clipped, b)
	}
	return clipped
}

// unload is coordlog.Options.Unload: drop partition i's states.
func (c *Coordinator) unload(i int32) {
	c.mu.Lock()
	for k, e := range c.states {
		if e.part == i {
			delete(c.states, k)
		}
	}
	c.mu.Unlock()
}

// Delete removes k's state: tombstones for its ShareSnapshot and ShareUpdate
// keys (acks=all), then the state itself. Deleting a key with no state
// writes nothing.
func (c *Coordinator) Delete(ctx context.Context, k share.Key) error {
	i := c.partitionFor(k)
	if i < 0 {
		return nil
	}
	if err := c.parts.WaitLoaded(ctx, i); err != nil {
		return err
	}
	c.mu.Lock()
	_, ok := c.states[k]
	c.mu.Unlock()
	if !ok {
		return nil
	}
	p := c.opts.Partition(i)
	if p == nil {
		return fmt.Errorf("%w: no replica of %s-%d", ErrNotCoordinator, Topic, i)
	}
	now := c.opts.Now().UnixMilli()
	recs := []record.BuildRecord{
		{Key: AppendKey(nil, TypeSnapshot, k), Timestamp: now},
		{Key: AppendKey(nil, TypeUpdate, k), Timestamp: now},
	}
	if err := coordlog.Append(ctx, p, recs, c.opts.AppendTimeout, ErrNotCoordinator); err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.states, k)
	c.mu.Unlock()
	return nil
}

// Keys returns the keys of group's persisted share partitions on the
// partitions this broker leads and has loaded.
func (c *Coordinator) Keys(group string) []share.Key {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []share.Key
	for k := range c.states {
		if k.Group == group {
			out = append(out, k)
		}
	}
	return out
}
