// Package group is Sluice's consumer-group coordinator for the classic
// protocol (JoinGroup/SyncGroup/Heartbeat/LeaveGroup) and the offset APIs,
// following Kafka's GroupCoordinator: the same state machine, generations,
// timeouts, static membership (KIP-345), member ids handed out before the
// first join (KIP-394), and the same error codes.
//
// Every group lives in memory; the metastore holds what must survive a
// restart: committed offsets, written and synced before a commit is
// answered, and each group's state, saved after each completed rebalance and
// on transitions to Empty or Dead. New loads both back; members of a loaded
// Stable group get fresh session timers, so a consumer that keeps
// heartbeating continues without a rebalance and a dead one expires.
//
// The coordinator is agnostic of assignors: the group leader assigns, the
// broker only relays metadata and assignments.
//
// Concurrency: a Coordinator is safe for concurrent use. c.mu guards the
// group map; each group has its own mutex. Lock order: c.mu before g.mu.
// Timers (session, rebalance, pending-sync) run callbacks that take g.mu and
// check a sequence number, so a callback that lost a race with a reset or a
// Stop does nothing.
package group

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/metastore"
)

// Defaults for zero Options fields, Kafka's defaults.
const (
	defaultMinSessionTimeout  = 6 * time.Second
	defaultMaxSessionTimeout  = 30 * time.Minute
	defaultOffsetsRetention   = 7 * 24 * time.Hour
	defaultRetentionCheck     = 10 * time.Minute // offsets.retention.check.interval.ms
	defaultMaxMetadataSize    = 4096             // offset.metadata.max.bytes
	defaultProducerIDExpiry   = 24 * time.Hour   // producer.id.expiration.ms
	newMemberJoinTimeout      = 5 * time.Minute  // Kafka's NewMemberJoinTimeoutMs
	authorizedOperationsUnset = -2147483648
)

// Options configures New.
type Options struct {
	// Store holds offsets and group state. Required; the caller closes it
	// after closing the Coordinator.
	Store *metastore.Store

	// InitialRebalanceDelay is group.initial.rebalance.delay.ms: how long
	// the first rebalance of an empty group waits for more members (0: none).
	InitialRebalanceDelay time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound the session timeout a
	// member may ask for (group.min/max.session.timeout.ms). 0: Kafka's
	// defaults, 6s and 30m.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// OffsetsRetention is offsets.retention.minutes. 0: 7 days.
	OffsetsRetention time.Duration
	// RetentionCheckInterval is offsets.retention.check.interval.ms, the
	// period of the expiry sweep. 0: 10 minutes; negative: no periodic sweep
	// (call ExpireOffsets).
	RetentionCheckInterval time.Duration
	// MaxGroupSize is group.max.size; 0: unlimited.
	MaxGroupSize int
	// MaxMetadataSize is offset.metadata.max.bytes. 0: 4096.
	MaxMetadataSize int
	// ProducerIDExpiration is producer.id.expiration.ms: how long the
	// single-node coordinator keeps the epoch of a producer id that has no
	// pending transactional offsets and was not seen (txn.go). 0: 1 day.
	ProducerIDExpiration time.Duration

	// Now replaces time.Now for timestamps when Clock is nil.
	Now func() time.Time
	// Clock, when set, supplies both the time and the timers (tests).
	Clock Clock
	// Logger: nil means slog.Default().
	Logger *slog.Logger

	// NodeID, Host and Port are what FindCoordinator answers.
	NodeID int32
	Host   string
	Port   int32

	// Owns, Persist and PersistGroup are the cluster-mode hooks
	// (ownership.go), the methods of package offsets' Coordinator; nil in
	// single-node mode. With Owns set nothing is loaded at New: Reload is
	// called as this broker takes over __consumer_offsets partitions.
	Owns         OwnsFunc
	Persist      PersistFunc
	PersistGroup PersistGroupFunc
	// PersistTxn is the cluster-mode hook of TxnOffsetCommit (package
	// offsets): nil in single-node mode.
	PersistTxn PersistTxnFunc
	// PartitionFor returns the __consumer_offsets partition of a group,
	// which HandleTxnCompletion matches against the partitions a
	// transaction marker was written to. nil: every group matches.
	PartitionFor func(group string) int32
}

// Coordinator is the group coordinator of one broker. Create it with New.
type Coordinator struct {
	store *metastore.Store
	clock Clock
	log   *slog.Logger
	opts  Options

	loaded  chan struct{} // closed when loading ends, well or badly
	loadErr error         // set before loaded is closed

	mu     sync.Mutex
	groups map[string]*group
	closed bool
	sweep  Timer

	// txnMu guards txnGroups: producer id -> names of the groups where it
	// may have pending transactional offsets (a superset: entries of
	// groups since deleted or unloaded are skipped). A leaf lock: taken
	// under g.mu, never held while taking another.
	txnMu     sync.Mutex
	txnGroups map[int64]map[string]struct{}
	// txnEpochs (guarded by txnMu), single-node mode only: the latest
	// epoch seen of each producer id, from TxnOffsetCommit and from
	// transaction markers, as a log's producer state keeps it (txn.go).
	txnEpochs map[int64]producerEpoch
	// epochMu serializes writes and deletions of stored producer epochs
	// (single-node mode), so the stored epoch of a producer only rises and
	// the expiry sweep's deletion cannot overtake a newer write. Taken
	// under g.mu, before txnMu.
	epochMu sync.Mutex
	// txnPos is the last position handed to a pending transactional offset
	// in single-node mode (txn.go); loading moves it past stored ones.
	txnPos atomic.Int64
}

// New creates the coordinator and starts loading groups and offsets from the
// store in the background. Until loading ends, group requests are answered
// with COORDINATOR_LOAD_IN_PROGRESS; if it fails, with
// COORDINATOR_NOT_AVAILABLE (and Loaded returns the error).
func New(opts Options) (*Coordinator, error) {
	if opts.Store == nil {
		return nil, fmt.Errorf("group: Options.Store is required")
	}
	if opts.MinSessionTimeout == 0 {
		opts.MinSessionTimeout = defaultMinSessionTimeout
	}
	if opts.MaxSessionTimeout == 0 {
		opts.MaxSessionTimeout = defaultMaxSessionTimeout
	}
	if opts.MinSessionTimeout > opts.MaxSessionTimeout {
		return nil, fmt.Errorf("group: min session timeout %v > max %v", opts.MinSessionTimeout, opts.MaxSessionTimeout)
	}
	if opts.OffsetsRetention <= 0 {
		opts.OffsetsRetention = defaultOffsetsRetention
	}
	if opts.RetentionCheckInterval == 0 {
		opts.RetentionCheckInterval = defaultRetentionCheck
	}
	if opts.MaxMetadataSize <= 0 {
		opts.MaxMetadataSize = defaultMaxMetadataSize
	}
	if opts.ProducerIDExpiration <= 0 {
		opts.ProducerIDExpiration = defaultProducerIDExpiry
	}
	c := &Coordinator{
		store:     opts.Store,
		clock:     opts.Clock,
		log:       opts.Logger,
		opts:      opts,
		loaded:    make(chan struct{}),
		groups:    make(map[string]*group),
		txnGroups: make(map[int64]map[string]struct{}),
		txnEpochs: make(map[int64]producerEpoch),
	}
	if c.clock == nil {
		c.clock = realClock{now: opts.Now}
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	go c.load()
	return c, nil
}

// Loaded waits until loading ends or ctx is done and returns the load error
// (nil on success) or ctx's error.
func (c *Coordinator) Loaded(ctx context.Context) error {
	select {
	case <-c.loaded:
		return c.loadErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// load reads every saved group and every group's offsets into memory,
// restarts the session timers of loaded members and schedules the sweep.
func (c *Coordinator) load() {
	defer close(c.loaded)
	if c.opts.Owns != nil {
		return
	}
	saved, err := c.store.ListGroups()
	if err != nil {
		c.loadErr = fmt.Errorf("group: load groups: %w", err)
		c.log.Error("group: load failed", "err", err)
		return
	}
	names, err := c.store.ListOffsetGroups()
	if err != nil {
		c.loadErr = fmt.Errorf("group: load offset groups: %w", err)
		c.log.Error("group: load failed", "err", err)
		return
	}
	groups := make(map[string]*group, len(saved)+len(names))
	for _, sg := range saved {
		groups[sg.Name] = fromStore(sg)
	}
	for _, name := range names {
		offs, err := c.store.FetchOffsets(name)
		if err != nil {
			c.loadErr = fmt.Errorf("group: load offsets of %q: %w", name, err)
			c.log.Error("group: load failed", "err", err)
			return
		}
		g := groups[name]
		if g == nil {
			g = newGroup(name, c.clock.Now())
			groups[name] = g
		}
		g.offsets = offs
	}
	if err := c.loadEpochs(); err != nil {
		c.loadErr = err
		c.log.Error("group: load failed", "err", err)
		return
	}
	if err := c.loadPending(groups, func(string) bool { return true }); err != nil {
		c.loadErr = err
		c.log.Error("group: load failed", "err", err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	for name, g := range groups {
		if g.state == stateDead {
			continue
		}
		c.groups[name] = g
		g.mu.Lock()
		for _, m := range g.members {
			c.scheduleHeartbeatLocked(g, m, m.sessionTimeout)
		}
		g.mu.Unlock()
	}
	c.scheduleSweepLocked()
	c.log.Info("group: coordinator loaded", "groups", len(c.groups))
}

// status returns the error code every group request gets now: 0 when the
// coordinator is serving.
func (c *Coordinator) status() int16 {
	select {
	case <-c.loaded:
	default:
		return errLoadInProgress
	}
	if c.loadErr != nil {
		return errCoordinatorNotAvailable
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errCoordinatorNotAvailable
	}
	return 0
}

// validateGroup is Kafka's validateGroupStatus: the coordinator's status,
// then INVALID_GROUP_ID for an empty name.
func (c *Coordinator) validateGroup(name string) int16 {
	if code := c.status(); code != 0 {
		return code
	}
	if name == "" {
		return errInvalidGroupID
	}
	return c.ownerCode(name)
}

// getGroup returns the group called name, creating an Empty one when create
// is set; nil when absent and not created, or when closed.
func (c *Coordinator) getGroup(name string, create bool) *group {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	g := c.groups[name]
	if g == nil && create {
		g = newGroup(name, c.clock.Now())
		c.groups[name] = g
	}
	return g
}

// Close stops every timer and answers every waiting JoinGroup and SyncGroup
// with COORDINATOR_NOT_AVAILABLE, so clients look for the coordinator again.
// Nothing needs saving: offsets and completed rebalances are already durable.
// Close does not close the store. It is idempotent.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	if c.sweep != nil {
		c.sweep.Stop()
	}
	groups := c.groups
	c.groups = make(map[string]*group)
	c.mu.Unlock()
	for _, g := range groups {
		g.mu.Lock()
		g.stopTimersLocked()
		for _, m := range g.members {
			stopTimer(m.hbTimer)
			m.hbSeq++
			answerJoin(m, joinResult{err: errCoordinatorNotAvailable, memberID: m.id, generation: -1})
			answerSync(m, syncResult{err: errCoordinatorNotAvailable})
		}
		for _, p := range g.pending {
			stopTimer(p.timer)
		}
		g.state = stateDead
		g.mu.Unlock()
	}
	return nil
}

// APIs returns the API keys the coordinator answers and the version range
// of each, for the server's dispatch table and ApiVersions.
func APIs() map[int16][2]int16 {
	out := make(map[int16][2]int16, len(versionRanges))
	for k, r := range versionRanges {
		out[k] = r
	}
	return out
}

// versionRanges are the versions served per API key.
var versionRanges = map[int16][2]int16{
	8:  {2, 9}, // OffsetCommit
	9:  {1, 9}, // OffsetFetch
	10: {0, 4}, // FindCoordinator
	11: {0, 9}, // JoinGroup
	12: {0, 4}, // Heartbeat
	13: {0, 5}, // LeaveGroup
	14: {0, 5}, // SyncGroup
	15: {0, 5}, // DescribeGroups
	16: {0, 5}, // ListGroups
	42: {0, 2}, // DeleteGroups
	47: {0, 0}, // OffsetDelete
	28: {0, 3}, // TxnOffsetCommit
}

// Handle answers one request (a kmsg request with its version set) and
// returns the response of the same version. JoinGroup and SyncGroup may
// block until the rebalance reaches them; ctx, cancelled when the client's
// connection closes, ends the wait with ctx's error (the member stays in the
// group until its timeouts remove it, as in Kafka). Other requests do not
// block except on the metastore's fsync.
//
// After Close, requests are answered with COORDINATOR_NOT_AVAILABLE. The
// response may share byte slices (member metadata, assignments) with the
// coordinator: encode it, do not modify it.
//
// Errors: ErrUnhandled for a key APIs does not list, ErrUnsupportedVersion
// for a version outside the range APIs gives, ctx.Err() as above. Protocol-level
// failures are error codes inside the response, never Go errors.
func (c *Coordinator) Handle(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	r, ok := versionRanges[req.Key()]
	if !ok {
		return nil, ErrUnhandled
	}
	if v := req.GetVersion(); v < r[0] || v > r[1] {
		return nil, fmt.Errorf("%w: key %d version %d", ErrUnsupportedVersion, req.Key(), v)
	}
	switch req := req.(type) {
	case *kmsg.OffsetCommitRequest:
		return c.offsetCommit(ctx, req), nil
	case *kmsg.OffsetFetchRequest:
		return c.offsetFetch(req), nil
	case *kmsg.FindCoordinatorRequest:
		return c.findCoordinator(req), nil
	case *kmsg.JoinGroupRequest:
		return c.joinGroup(ctx, req)
	case *kmsg.HeartbeatRequest:
		return c.heartbeat(req), nil
	case *kmsg.LeaveGroupRequest:
		return c.leaveGroup(req), nil
	case *kmsg.SyncGroupRequest:
		return c.syncGroup(ctx, req)
	case *kmsg.DescribeGroupsRequest:
		return c.describeGroups(req), nil
	case *kmsg.ListGroupsRequest:
		return c.listGroups(req), nil
	case *kmsg.DeleteGroupsRequest:
		return c.deleteGroups(req), nil
	case *kmsg.OffsetDeleteRequest:
		return c.offsetDelete(req), nil
	case *kmsg.TxnOffsetCommitRequest:
		return c.txnOffsetCommit(ctx, req), nil
	}
	return nil, ErrUnhandled
}
