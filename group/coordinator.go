// Package group is Sluice's consumer-group coordinator for the classic
// protocol (JoinGroup/SyncGroup/Heartbeat/LeaveGroup) and the offset APIs,
// following Kafka's GroupCoordinator: the same state machine, generations,
// timeouts, static membership (KIP-345), member ids handed out before the
// first join (KIP-394), and the same error codes.
//
// Every group lives in memory. What must survive a restart has one
// persistence path, the same on a single node and in a cluster: the
// internal topic __consumer_offsets, written through the hooks of package
// offsets (Options.Owns, Persist, PersistGroup, PersistTxn). A commit is
// appended there with acks=all and answered once committed; each group's
// state is appended after each completed rebalance and on transitions to
// Empty or Dead. The metastore is the materialized view of that log: a
// write is applied to it (and to memory) only after the append, and when
// this broker takes over a partition, package offsets replays it into the
// metastore and calls Reload for its groups (ownership.go). Members of a
// reloaded Stable group get fresh session timers, so a consumer that keeps
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
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/errcode"
	"github.com/sluice/sluice/metastore"
)

// Defaults for zero Options fields, Kafka's defaults.
const (
	defaultMinSessionTimeout  = 6 * time.Second
	defaultMaxSessionTimeout  = 30 * time.Minute
	defaultOffsetsRetention   = 7 * 24 * time.Hour
	defaultRetentionCheck     = 10 * time.Minute // offsets.retention.check.interval.ms
	defaultMaxMetadataSize    = 4096             // offset.metadata.max.bytes
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

	// Owns, Persist, PersistGroup and PersistTxn are the persistence hooks
	// (ownership.go), the methods of package offsets' Coordinator, in both
	// modes. Required. Nothing is loaded at New: Reload is called as this
	// broker takes over __consumer_offsets partitions.
	Owns         OwnsFunc
	Persist      PersistFunc
	PersistGroup PersistGroupFunc
	PersistTxn   PersistTxnFunc
	// Loading reports whether some __consumer_offsets partition led here
	// is still loading: ListGroups then answers
	// COORDINATOR_LOAD_IN_PROGRESS, as Kafka's does, rather than a partial
	// list. nil: never.
	Loading func() bool
	// PartitionFor returns the __consumer_offsets partition of a group,
	// which HandleTxnCompletion matches against the partitions a
	// transaction marker was written to. nil: every group matches.
	PartitionFor func(group string) int32

	// Consumer groups (KIP-848, consumer_coordinator.go). PersistConsumer
	// (offsets.Coordinator.PersistConsumer) and Topics are required for
	// ConsumerGroupHeartbeat; without them it answers
	// COORDINATOR_NOT_AVAILABLE. Zero values are Kafka's defaults:
	// group.consumer.heartbeat.interval.ms 5s, .session.timeout.ms 45s,
	// .max.size unlimited, .assignors uniform,range.
	PersistConsumer           PersistConsumerFunc
	Topics                    TopicSource
	ConsumerHeartbeatInterval time.Duration
	ConsumerSessionTimeout    time.Duration
	ConsumerMaxSize           int
	ConsumerAssignors         []string
	// ConsumerGroupTimeouts, when set, returns a group's own session
	// timeout and heartbeat interval (its consumer.session.timeout.ms and
	// consumer.heartbeat.interval.ms group configs, KIP-848); a zero
	// value falls back to the two above. Called with the group's lock
	// held, on every heartbeat: it must be cheap and must not call back
	// into the Coordinator.
	ConsumerGroupTimeouts func(group string) (session, heartbeat time.Duration)
	// ConsumerMigrationPolicy is group.consumer.migration.policy:
	// "bidirectional" (also ""), "upgrade", "downgrade" or "disabled"
	// (consumer_migration.go).
	ConsumerMigrationPolicy string

	// Share groups (KIP-932, share_coordinator.go). PersistShare
	// (offsets.Coordinator.PersistShare) and Topics are required for
	// ShareGroupHeartbeat; without them it answers
	// COORDINATOR_NOT_AVAILABLE. ShareGroupConfigs returns a group's
	// effective configuration (nil: Kafka's defaults); it is called with
	// the group's lock held and must not call back into the Coordinator.
	// ShareMaxSize is group.share.max.size (0: 200). ShareMemberGone,
	// when set, is told each member the coordinator removes (it left
	// with epoch -1 or its session timed out), once the removal is
	// committed, so that the data path releases what the member holds; it
	// runs on its own goroutine, with no lock of the Coordinator held.
	PersistShare      PersistShareFunc
	ShareGroupConfigs func(group string) ShareGroupConfig
	ShareMaxSize      int
	ShareMemberGone   func(group, member string)
	// ShareDeleteState, when set, deletes an empty share group's share
	// state (on every share coordinator) before DeleteGroups deletes the
	// group; its error fails the deletion, as Kafka's
	// GroupCoordinatorService.deleteGroups. Called with the group's lock
	// held; it must not call back into the Coordinator.
	ShareDeleteState func(group string) error
}

// Coordinator is the group coordinator of one broker. Create it with New.
type Coordinator struct {
	store *metastore.Store
	clock Clock
	log   *slog.Logger
	opts  Options

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

	// cgs are the consumer groups (KIP-848; consumer_coordinator.go).
	cgs consumerGroups
	// sgs are the share groups (KIP-932; share_coordinator.go).
	sgs shareGroups

	// rebalances count rebalances for the metrics (stats.go).
	rebalances rebalanceCounters
}

// New creates the coordinator, which holds no group until Reload installs
// the groups of the __consumer_offsets partitions this broker takes over,
// and starts the periodic offset expiry sweep. Errors: a missing required
// option, bad session timeout bounds.
func New(opts Options) (*Coordinator, error) {
	if opts.Store == nil {
		return nil, fmt.Errorf("group: Options.Store is required")
	}
	if opts.Owns == nil || opts.Persist == nil || opts.PersistGroup == nil || opts.PersistTxn == nil {
		return nil, fmt.Errorf("group: Options.Owns, Persist, PersistGroup and PersistTxn are required")
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
	c := &Coordinator{
		store:     opts.Store,
		clock:     opts.Clock,
		log:       opts.Logger,
		opts:      opts,
		groups:    make(map[string]*group),
		txnGroups: make(map[int64]map[string]struct{}),
	}
	if c.clock == nil {
		c.clock = realClock{now: opts.Now}
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.mu.Lock()
	c.scheduleSweepLocked()
	c.mu.Unlock()
	return c, nil
}

// status returns the error every group request gets now: nil when the
// coordinator is serving (each group's own ownership and loading are
// ownerErr's).
func (c *Coordinator) status() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errCoordinatorNotAvailable
	}
	return nil
}

// validateGroup is Kafka's validateGroupStatus: the coordinator's status,
// then INVALID_GROUP_ID for an empty name.
func (c *Coordinator) validateGroup(name string) error {
	if err := c.status(); err != nil {
		return err
	}
	if name == "" {
		return errInvalidGroupID
	}
	return c.ownerErr(name)
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
	c.closeConsumerGroups()
	c.closeShareGroups()
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
	8:  {1, 9}, // OffsetCommit (v0 is not served: README)
	9:  {1, 9}, // OffsetFetch
	10: {0, 4}, // FindCoordinator
	11: {0, 9}, // JoinGroup
	12: {0, 4}, // Heartbeat
	13: {0, 5}, // LeaveGroup
	14: {0, 5}, // SyncGroup
	15: {0, 6}, // DescribeGroups
	16: {0, 5}, // ListGroups
	42: {0, 2}, // DeleteGroups
	47: {0, 0}, // OffsetDelete
	28: {0, 3}, // TxnOffsetCommit
	68: {0, 1}, // ConsumerGroupHeartbeat
	69: {0, 1}, // ConsumerGroupDescribe
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
// for a version outside the range APIs gives, ctx.Err() as above.
// Protocol-level failures are error codes inside the response (the codes
// errcode.Code gives the coordinator's errors), never Go errors.
func (c *Coordinator) Handle(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	r, ok := versionRanges[req.Key()]
	if !ok {
		r, ok = shareVersionRanges[req.Key()]
	}
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
	case *kmsg.ConsumerGroupHeartbeatRequest:
		if c.opts.PersistConsumer == nil || c.opts.Topics == nil {
			resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
			resp.ErrorCode = errcode.Code(errCoordinatorNotAvailable)
			return resp, nil
		}
		return c.consumerGroupHeartbeat(ctx, req), nil
	case *kmsg.ConsumerGroupDescribeRequest:
		return c.consumerGroupDescribe(req), nil
	case *kmsg.ShareGroupHeartbeatRequest:
		if c.opts.PersistShare == nil || c.opts.Topics == nil {
			resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
			resp.ErrorCode = errcode.Code(errCoordinatorNotAvailable)
			return resp, nil
		}
		return c.shareGroupHeartbeat(ctx, req), nil
	case *kmsg.ShareGroupDescribeRequest:
		return c.shareGroupDescribe(req), nil
	}
	return nil, ErrUnhandled
}
