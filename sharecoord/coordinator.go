package sharecoord

import (
	"context"
	"encoding/base64"
	"errors"
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
	dlq           *DLQState // dead-letter bookkeeping (dlq.go), nil: none
	leaderEpoch   int32     // the highest leader epoch written or read with (-1: none)
	snapshotEpoch int32
	createTime    int64
	part          int32 // the __share_group_state partition holding it
}

// Coordinator keeps the persisted state of the share partitions whose
// __share_group_state partitions this broker leads. Safe for concurrent
// use; the writes of one __share_group_state partition are serialized (as
// Kafka's runtime runs one shard's operations one at a time), so a
// read-modify-write of a share partition's state never interleaves with
// another.
type Coordinator struct {
	opts  Options
	parts *coordlog.Partitions

	wmu    sync.Mutex
	writes map[int32]*sync.Mutex // per __share_group_state partition

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
	c := &Coordinator{opts: opts, states: map[share.Key]*entry{}, writes: map[int32]*sync.Mutex{}}
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

// PartitionFor is k's __share_group_state partition among n (Kafka's
// ShareCoordinatorService.partitionFor: the Java hash of the coordinator
// key), -1 when n <= 0.
func PartitionFor(k share.Key, n int32) int32 {
	if n <= 0 {
		return -1
	}
	return coordlog.PartitionFor(CoordinatorKey(k), n)
}

// partitionFor is k's __share_group_state partition, -1 without the topic.
func (c *Coordinator) partitionFor(k share.Key) int32 {
	return PartitionFor(k, c.opts.NumPartitions())
}

// Errors of the persister operations (Kafka's codes in server): the
// share partition's leader epoch or state epoch is older than the one
// the state was last written or read with (FENCED_LEADER_EPOCH,
// FENCED_STATE_EPOCH), or the request names no valid share partition
// (INVALID_REQUEST).
var (
	ErrFencedLeaderEpoch = errors.New("sharecoord: fenced leader epoch")
	ErrFencedStateEpoch  = errors.New("sharecoord: fenced state epoch")
	ErrInvalid           = errors.New("sharecoord: invalid share partition")
)

// Check says whether this broker can serve k now: nil when it leads k's
// partition and has loaded it; ErrNotCoordinator (also without the
// topic) or coordlog.ErrLoadInProgress otherwise. The persister APIs
// answer with it without waiting, as Kafka's runtime does.
func (c *Coordinator) Check(k share.Key) error {
	i := c.partitionFor(k)
	if i < 0 {
		return fmt.Errorf("%w: %s does not exist", ErrNotCoordinator, Topic)
	}
	owned, loading := c.parts.State(i)
	switch {
	case !owned:
		return fmt.Errorf("%w: %s-%d", ErrNotCoordinator, Topic, i)
	case loading:
		return fmt.Errorf("%w: %s-%d", coordlog.ErrLoadInProgress, Topic, i)
	}
	return nil
}

// wait waits for k's partition's load: ErrNotCoordinator when this broker
// does not lead it.
func (c *Coordinator) wait(ctx context.Context, k share.Key) (int32, error) {
	i := c.partitionFor(k)
	if i < 0 {
		return -1, fmt.Errorf("%w: %s does not exist", ErrNotCoordinator, Topic)
	}
	if err := c.parts.WaitLoaded(ctx, i); err != nil {
		if errors.Is(err, coordlog.ErrNotOwned) {
			return -1, fmt.Errorf("%w: %s-%d", ErrNotCoordinator, Topic, i)
		}
		return -1, err
	}
	return i, nil
}

// State is a share partition's persisted state as the persister APIs
// carry it.
type State struct {
	share.Snapshot
	LeaderEpoch int32
	DLQ         *DLQState // nil: none
}

// Read returns k's persisted state, waiting for its partition's load.
// ok is false when none was written (or it was deleted), also when this
// broker has no __share_group_state at all. Errors: ErrNotCoordinator
// when this broker does not lead k's partition, ctx's.
func (c *Coordinator) Read(ctx context.Context, k share.Key) (share.Snapshot, bool, error) {
	if c.partitionFor(k) < 0 {
		return share.Snapshot{}, false, nil // no topic: nothing was ever written
	}
	st, ok, err := c.ReadState(ctx, k, -1)
	return st.Snapshot, ok, err
}

// ReadState is ReadShareGroupState (Kafka's
// readStateAndMaybeUpdateLeaderEpoch): k's state; ok is false when there
// is none (the state then reads start offset -1, state epoch 0).
// ErrFencedLeaderEpoch when the state was written or read with a newer
// leader epoch; a newer leaderEpoch (-1: none, as a summary reads) is
// written (a ShareSnapshot) before it is answered, so a partition leader
// that read the state fences the writes of the leader before it, also
// across a coordinator failover.
func (c *Coordinator) ReadState(ctx context.Context, k share.Key, leaderEpoch int32) (State, bool, error) {
	if _, err := c.wait(ctx, k); err != nil {
		return State{}, false, err
	}
	c.mu.Lock()
	e := c.states[k]
	if e == nil {
		c.mu.Unlock()
		return State{LeaderEpoch: -1, Snapshot: share.Snapshot{StartOffset: -1}}, false, nil
	}
	st := State{Snapshot: cloneSnapshot(e.snap), LeaderEpoch: e.leaderEpoch, DLQ: e.dlq.Clone()}
	c.mu.Unlock()
	if leaderEpoch != -1 && st.LeaderEpoch > leaderEpoch {
		return State{}, false, fmt.Errorf("%w: %d, state read or written with %d", ErrFencedLeaderEpoch, leaderEpoch, st.LeaderEpoch)
	}
	if leaderEpoch <= st.LeaderEpoch {
		return st, true, nil
	}
	err := c.update(ctx, k, func(prev *entry) (Value, error) {
		if prev == nil {
			return Value{}, fmt.Errorf("%w: state of %s deleted meanwhile", ErrNotCoordinator, CoordinatorKey(k))
		}
		if prev.leaderEpoch > leaderEpoch {
			return Value{}, fmt.Errorf("%w: %d, state at %d", ErrFencedLeaderEpoch, leaderEpoch, prev.leaderEpoch)
		}
		st = State{Snapshot: cloneSnapshot(prev.snap), LeaderEpoch: leaderEpoch, DLQ: prev.dlq.Clone()}
		return Value{StateEpoch: prev.snap.StateEpoch, LeaderEpoch: leaderEpoch, StartOffset: prev.snap.StartOffset, Batches: prev.snap.Batches, DLQ: prev.dlq}, nil
	})
	if err != nil {
		return State{}, false, err
	}
	return st, true, nil
}

// WriteReq is a WriteShareGroupState of one share partition.
type WriteReq struct {
	StateEpoch  int32 // -1: unchanged (no check)
	LeaderEpoch int32 // -1: unchanged (no check)
	StartOffset int64 // -1: unchanged
	Batches     []share.StateBatch
	DLQ         *DLQState // nil: unchanged
}

// MaxBatches bounds the state batches of one share partition a write may
// leave (a hostile or broken writer cannot grow a record past what a
// replica takes): group.share.partition.max.record.locks' maximum, each
// offset its own batch, with room for the archived and acknowledged.
const MaxBatches = 1 << 16

// Write is WriteShareGroupState: it merges w into k's state (the offsets
// w's batches name take w's state, offsets below the start offset go;
// Kafka's PersisterStateBatchCombiner) and persists the result as a
// ShareSnapshot with acks=all, returning once it is committed.
// ErrFencedLeaderEpoch, ErrFencedStateEpoch when w is older than the
// state; ErrInvalid for a negative partition or too many batches.
func (c *Coordinator) Write(ctx context.Context, k share.Key, w WriteReq) error {
	if k.Partition < 0 || len(w.Batches) > MaxBatches {
		return fmt.Errorf("%w: partition %d, %d batches", ErrInvalid, k.Partition, len(w.Batches))
	}
	return c.update(ctx, k, func(prev *entry) (Value, error) {
		v := Value{StateEpoch: w.StateEpoch, LeaderEpoch: w.LeaderEpoch, StartOffset: w.StartOffset, DLQ: w.DLQ}
		if v.DLQ == nil && prev != nil {
			v.DLQ = prev.dlq
		}
		if prev == nil {
			v.StateEpoch = max(v.StateEpoch, 0)
			if v.StartOffset < 0 {
				v.StartOffset = 0
				for _, b := range w.Batches {
					v.StartOffset = b.First
					break
				}
			}
			v.Batches = MergeBatches(nil, w.Batches, v.StartOffset)
			return v, nil
		}
		if w.LeaderEpoch != -1 && prev.leaderEpoch > w.LeaderEpoch {
			return v, fmt.Errorf("%w: %d, state at %d", ErrFencedLeaderEpoch, w.LeaderEpoch, prev.leaderEpoch)
		}
		if w.StateEpoch != -1 && prev.snap.StateEpoch > w.StateEpoch {
			return v, fmt.Errorf("%w: %d, state at %d", ErrFencedStateEpoch, w.StateEpoch, prev.snap.StateEpoch)
		}
		if v.StateEpoch == -1 {
			v.StateEpoch = prev.snap.StateEpoch
		}
		if v.LeaderEpoch < 0 {
			v.LeaderEpoch = prev.leaderEpoch
		}
		if v.StartOffset < 0 {
			v.StartOffset = prev.snap.StartOffset
		}
		v.Batches = MergeBatches(prev.snap.Batches, w.Batches, v.StartOffset)
		if len(v.Batches) > MaxBatches {
			return v, fmt.Errorf("%w: %d batches after the merge", ErrInvalid, len(v.Batches))
		}
		return v, nil
	})
}

// Initialize is InitializeShareGroupState: k's state becomes stateEpoch
// and startOffset with nothing in flight (a new share partition, or an
// AlterShareGroupOffsets reset). ErrFencedStateEpoch when the state is at
// a newer state epoch.
func (c *Coordinator) Initialize(ctx context.Context, k share.Key, stateEpoch int32, startOffset int64) error {
	if k.Partition < 0 {
		return fmt.Errorf("%w: partition %d", ErrInvalid, k.Partition)
	}
	return c.update(ctx, k, func(prev *entry) (Value, error) {
		v := Value{StateEpoch: stateEpoch, LeaderEpoch: -1, StartOffset: max(startOffset, 0)}
		if prev != nil {
			if prev.snap.StateEpoch > stateEpoch {
				return v, fmt.Errorf("%w: %d, state at %d", ErrFencedStateEpoch, stateEpoch, prev.snap.StateEpoch)
			}
			v.LeaderEpoch, v.DLQ = prev.leaderEpoch, prev.dlq
		}
		return v, nil
	})
}

// update runs a read-modify-write of k's state under its partition's
// write lock: next computes the new value from the current entry (nil:
// none), which is appended as a ShareSnapshot and then installed.
func (c *Coordinator) update(ctx context.Context, k share.Key, next func(prev *entry) (Value, error)) error {
	i, err := c.wait(ctx, k)
	if err != nil {
		return err
	}
	p := c.opts.Partition(i)
	if p == nil {
		return fmt.Errorf("%w: no replica of %s-%d", ErrNotCoordinator, Topic, i)
	}
	c.wmu.Lock()
	mu := c.writes[i]
	if mu == nil {
		mu = &sync.Mutex{}
		c.writes[i] = mu
	}
	c.wmu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	now := c.opts.Now().UnixMilli()
	c.mu.Lock()
	prev := c.states[k]
	if prev != nil {
		p := *prev
		prev = &p
	}
	c.mu.Unlock()
	v, err := next(prev)
	if err != nil {
		return err
	}
	v.CreateTime, v.WriteTime = now, now
	if prev != nil {
		v.SnapshotEpoch, v.CreateTime = prev.snapshotEpoch+1, prev.createTime
	}
	rec := record.BuildRecord{
		Key:       AppendKey(nil, TypeSnapshot, k),
		Value:     AppendSnapshotValue(nil, v),
		Timestamp: now,
	}
	if err := coordlog.Append(ctx, p, []record.BuildRecord{rec}, c.opts.AppendTimeout, ErrNotCoordinator); err != nil {
		return err
	}
	c.mu.Lock()
	if owned, _ := c.parts.State(i); owned {
		c.states[k] = &entry{
			snap: share.Snapshot{StateEpoch: v.StateEpoch, StartOffset: v.StartOffset, Batches: v.Batches}, dlq: v.DLQ.Clone(),
			leaderEpoch: v.LeaderEpoch, snapshotEpoch: v.SnapshotEpoch, createTime: v.CreateTime, part: i,
		}
	}
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
			snap: share.Snapshot{StateEpoch: v.StateEpoch, StartOffset: v.StartOffset, Batches: v.Batches}, dlq: v.DLQ,
			leaderEpoch: v.LeaderEpoch, snapshotEpoch: v.SnapshotEpoch, createTime: v.CreateTime, part: part,
		}
		return
	}
	e := states[k]
	if e == nil {
		// An update without a snapshot before it (compacted away, or
		// written by a coordinator that starts from updates): its own
		// state.
		start := max(v.StartOffset, 0)
		e = &entry{snap: share.Snapshot{StartOffset: start}, leaderEpoch: -1, part: part}
		states[k] = e
	}
	e.leaderEpoch = max(e.leaderEpoch, v.LeaderEpoch)
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
	if c.partitionFor(k) < 0 {
		return nil
	}
	i, err := c.wait(ctx, k)
	if err != nil {
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
