// Package offsets is the persistence of the group coordinator, on a single
// node and in a cluster alike: the internal __consumer_offsets topic, as
// Kafka's GroupMetadataManager, built on coordlog. The log is the truth;
// the metastore is its materialized view, which each partition's load
// rebuilds from the log and the group coordinator reads its groups from
// (group.Coordinator.Reload). A single node leads every partition (one
// replica each); a data dir written when a single node kept its groups in
// the metastore alone is migrated into the log once (migrate.go).
//
//   - The coordinator of a group is the leader of partition
//     coordlog.PartitionFor(group, n) of __consumer_offsets. The server
//     answers FindCoordinator with that leader, creating the topic
//     (TopicConfigs) on the first request.
//   - An OffsetCommit is appended to that partition with acks=all and
//     answered only once the high watermark passes it (Persist, the
//     group.Options.Persist hook); then the metastore materializes it.
//   - When this broker becomes leader of a partition (OnRole), it loads it:
//     replays the log from its start to the log end it has when the load
//     starts into the metastore (latest record per key, tombstones delete)
//     and reloads those groups into the group coordinator; until then Owns
//     reports them loading (COORDINATOR_LOAD_IN_PROGRESS). When it stops
//     leading, the groups are unloaded at once (NOT_COORDINATOR).
//
// Transactional offset commits (TxnOffsetCommit) are written as
// transactional batches of the producer and replayed as pending until the
// partition's COMMIT or ABORT marker (txn.go).
//
// Group metadata records (a completed rebalance, a group turning Empty or
// deleted) go the same way (PersistGroup), so a new coordinator knows the
// members and their generation. The topic is compacted (TopicConfigs), so
// a load replays about one record per live key once the log cleaner ran,
// and every write since the last cleaning. The record formats are Kafka's
// (format.go).
//
// The package knows nothing of the server: it is handed the local replicas,
// the group coordinator's Unload and Reload, and the metastore (Options).
package offsets

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/sluice/sluice/coordlog"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replication"
)

// Topic is Kafka's internal offsets topic.
const Topic = "__consumer_offsets"

// TopicConfigs returns the topic configs __consumer_offsets is created with,
// Kafka's: cleanup.policy=compact (the cleaner keeps each group's latest
// offsets and metadata, and drops what tombstones deleted, so a new
// coordinator replays only that), compression.type=producer, and
// segment.bytes from offsets.topic.segment.bytes. The caller owns the map.
func TopicConfigs(segmentBytes int32) map[string]string {
	return map[string]string{
		"cleanup.policy":   "compact",
		"compression.type": "producer",
		"segment.bytes":    strconv.Itoa(int(segmentBytes)),
	}
}

// commitTimeout is offsets.commit.timeout.ms: how long a commit waits for
// the in-sync replicas.
const commitTimeout = 5 * time.Second

// Options configures New. The functions are called from request handlers
// and load goroutines: they must be safe for concurrent use.
type Options struct {
	// NumPartitions returns the partition count of the local
	// __consumer_offsets topic, 0 when this broker has no replica of it.
	// Called on every group request: it must be cheap. Required.
	NumPartitions func() int32
	// Partition returns the local replica of partition i, nil when this
	// broker has none. Required.
	Partition func(i int32) *replication.Partition
	// Unload and Reload are the group coordinator's Unload and Reload
	// (group.Coordinator): drop the matching groups from memory, and
	// rebuild them from the metastore. Required; they are first called
	// from OnRole, so they may resolve the coordinator late.
	Unload func(match func(group string) bool)
	Reload func(match func(group string) bool) error
	// ReloadConsumer replaces the consumer groups (KIP-848) match selects
	// by those the replay found: each group's latest record per key, in
	// log order. nil: consumer group records are read and dropped.
	ReloadConsumer func(match func(group string) bool, groups map[string][]ConsumerRecord) error
	// ReloadShare is ReloadConsumer for share groups (KIP-932). nil: share
	// group records are read and dropped.
	ReloadShare func(match func(group string) bool, groups map[string][]ShareRecord) error
	// Meta is the metastore the replay materializes into. Required.
	Meta *metastore.Store
	// Now stamps records. nil: time.Now.
	Now func() time.Time
	// Logger: nil means slog.Default().
	Logger *slog.Logger
}

// Coordinator tracks which __consumer_offsets partitions this broker leads
// and has loaded, and writes the group coordinator's records to them.
// Create it with New; its methods Owns, Persist and PersistGroup are the
// group.Options hooks. Safe for concurrent use.
type Coordinator struct {
	opts  Options
	parts *coordlog.Partitions
	seqs  seqTable // producer sequences per partition (txn.go)
}

// New returns a Coordinator that leads no partition yet.
func New(opts Options) *Coordinator {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	c := &Coordinator{opts: opts}
	c.parts = coordlog.New(coordlog.Options{
		Topic:  Topic,
		Load:   c.load,
		Unload: c.unload,
		Logger: opts.Logger,
	})
	return c
}

// Owns is group.Options.Owns: owned when this broker leads the group's
// partition, loading until that partition is loaded.
func (c *Coordinator) Owns(name string) (owned, loading bool) {
	n := c.opts.NumPartitions()
	if n == 0 {
		return false, false
	}
	return c.parts.State(coordlog.PartitionFor(name, n))
}

// PartitionState reports whether this broker leads partition i of
// __consumer_offsets (owned) and, if so, whether its load is still
// running (loading). The WriteTxnMarkers handler answers
// COORDINATOR_LOAD_IN_PROGRESS for a loading partition before appending
// the marker: a marker past the end the replay reads would otherwise
// complete nothing (the groups are not installed yet) and then the load
// would install the producer's offsets as pending, never to complete.
func (c *Coordinator) PartitionState(i int32) (owned, loading bool) { return c.parts.State(i) }

// matcher matches the groups stored in partition i of n.
func matcher(i, n int32) func(string) bool {
	return func(g string) bool { return coordlog.PartitionFor(g, n) == i }
}

// Persist is group.Options.Persist: one batch of offset records (and
// tombstones) of group name appended with acks=all to the group's
// partition. Errors wrap coordlog.ErrNotCoordinator when this broker does not
// lead that partition, ErrTooLong when a string does not fit the record.
func (c *Coordinator) Persist(ctx context.Context, name string, offsets map[metastore.TopicPartition]metastore.CommittedOffset, deleted []metastore.TopicPartition) error {
	if err := checkOffsets(name, offsets, deleted); err != nil {
		return err
	}
	p, err := c.leaderFor(name)
	if err != nil {
		return err
	}
	return coordlog.Append(ctx, p, c.offsetRecords(name, offsets, deleted), commitTimeout, coordlog.ErrNotCoordinator)
}

// PersistGroup is group.Options.PersistGroup: one group metadata record (a
// tombstone when deleted) appended with acks=all. Errors as Persist.
func (c *Coordinator) PersistGroup(ctx context.Context, sg metastore.Group, deleted bool) error {
	if err := checkGroup(sg); err != nil {
		return err
	}
	p, err := c.leaderFor(sg.Name)
	if err != nil {
		return err
	}
	rec := record.BuildRecord{Key: appendGroupKey(nil, sg.Name), Timestamp: c.opts.Now().UnixMilli()}
	if !deleted {
		rec.Value = appendGroupValue(nil, sg)
	}
	return coordlog.Append(ctx, p, []record.BuildRecord{rec}, commitTimeout, coordlog.ErrNotCoordinator)
}

// leaderFor returns the local replica of name's partition if it leads.
func (c *Coordinator) leaderFor(name string) (*replication.Partition, error) {
	n := c.opts.NumPartitions()
	if n == 0 {
		return nil, fmt.Errorf("%w: no local %s", coordlog.ErrNotCoordinator, Topic)
	}
	i := coordlog.PartitionFor(name, n)
	p := c.opts.Partition(i)
	if p == nil || !p.IsLeader() {
		return nil, fmt.Errorf("%w: not the leader of %s-%d", coordlog.ErrNotCoordinator, Topic, i)
	}
	return p, nil
}

// offsetRecords returns the records of one commit of group name: offsets,
// then tombstones for deleted.
func (c *Coordinator) offsetRecords(name string, offsets map[metastore.TopicPartition]metastore.CommittedOffset, deleted []metastore.TopicPartition) []record.BuildRecord {
	now := c.opts.Now().UnixMilli()
	recs := make([]record.BuildRecord, 0, len(offsets)+len(deleted))
	for tp, o := range offsets {
		k := appendOffsetKey(nil, offsetKey{Group: name, Topic: tp.Topic, Partition: tp.Partition})
		recs = append(recs, record.BuildRecord{Key: k, Value: appendOffsetValue(nil, o), Timestamp: now})
	}
	for _, tp := range deleted {
		k := appendOffsetKey(nil, offsetKey{Group: name, Topic: tp.Topic, Partition: tp.Partition})
		recs = append(recs, record.BuildRecord{Key: k, Timestamp: now})
	}
	return recs
}

// OnRole is called after LeaderAndIsr applied a state to partition i of
// __consumer_offsets: leading starts a load, following unloads (at once,
// so no request of those groups is served past the leadership change).
func (c *Coordinator) OnRole(i int32, leader bool) { c.parts.OnRole(i, leader) }

// OnStop is called when the replica of partition i is stopped (StopReplica),
// before it is closed: its groups are unloaded.
func (c *Coordinator) OnStop(i int32) { c.parts.OnRole(i, false) }

// Close stops retrying loads and waits for those running. Call it before
// closing the partitions, the group coordinator and the metastore.
func (c *Coordinator) Close() { c.parts.Close() }

// unload is coordlog.Options.Unload: drops partition i's groups from the
// group coordinator.
func (c *Coordinator) unload(i int32) {
	if n := c.opts.NumPartitions(); n > 0 {
		c.opts.Unload(matcher(i, n))
	}
}

// load is coordlog.Options.Load: one attempt to replay partition i into the
// metastore and reload its groups into the group coordinator. It returns
// coordlog.ErrStale, leaving the metastore and the group coordinator alone,
// when the leadership it loads for ended during the replay. It reports what
// the replay read and the view it built.
func (c *Coordinator) load(i int32, current func() bool) (coordlog.Loaded, error) {
	p := c.opts.Partition(i)
	n := c.opts.NumPartitions()
	if p == nil || n == 0 {
		return coordlog.Loaded{}, fmt.Errorf("offsets: no local replica of %s-%d", Topic, i)
	}
	v, st, err := replay(p, p.LogEndOffset())
	if err != nil {
		return coordlog.Loaded{}, err
	}
	if !current() {
		return coordlog.Loaded{}, coordlog.ErrStale
	}
	match := matcher(i, n)
	if err := v.materialize(c.opts.Meta, match); err != nil {
		return coordlog.Loaded{}, err
	}
	c.seqs.reset(i, v.seqs)
	if err := c.opts.Reload(match); err != nil {
		return coordlog.Loaded{}, err
	}
	if c.opts.ReloadConsumer != nil {
		if err := c.opts.ReloadConsumer(match, v.consumerGroups(match)); err != nil {
			return coordlog.Loaded{}, err
		}
	}
	if c.opts.ReloadShare != nil {
		if err := c.opts.ReloadShare(match, v.shareGroups(match)); err != nil {
			return coordlog.Loaded{}, err
		}
	}
	return coordlog.Loaded{Replay: st, State: v.summary()}, nil
}
