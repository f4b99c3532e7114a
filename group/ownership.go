package group

// The persistence hooks, the same on a single node and in a cluster. Each
// group belongs to one coordinator, the leader of its __consumer_offsets
// partition (a single node leads them all). Package offsets decides that
// (Options.Owns) and makes commits and group state durable in that topic
// (Options.Persist, PersistGroup, PersistTxn); the coordinator only asks,
// so it stays testable alone.
//
// The coordinator loads nothing at New: package offsets replays each
// __consumer_offsets partition into the metastore when this broker becomes
// its leader and then calls Reload for that partition's groups; when it
// stops leading, Unload drops them from memory.

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice/sluice/coordlog"
	"github.com/sluice/sluice/metastore"
)

// ErrNotCoordinator is what a Persist hook wraps when this broker no longer
// leads the group's offsets partition: the client gets NOT_COORDINATOR and
// looks the coordinator up again. Any other Persist error is answered with
// COORDINATOR_NOT_AVAILABLE (retriable), as Kafka maps failed appends to
// __consumer_offsets (errcode.AppendCode). It is the coordinator runtime's
// coordlog.ErrNotCoordinator.
var ErrNotCoordinator = coordlog.ErrNotCoordinator

// OwnsFunc reports whether this broker coordinates group: owned false means
// NOT_COORDINATOR; owned and loading means COORDINATOR_LOAD_IN_PROGRESS.
// It is called on every group request; it must be cheap and safe for
// concurrent use.
type OwnsFunc func(group string) (owned, loading bool)

// PersistFunc makes one commit durable before it is applied: offsets are
// new committed offsets, deleted the partitions whose offsets are removed
// (tombstones). It returns only when the records are committed (replicated
// to the in-sync replicas), or with an error; ctx bounds the wait.
type PersistFunc func(ctx context.Context, group string, offsets map[metastore.TopicPartition]metastore.CommittedOffset, deleted []metastore.TopicPartition) error

// PersistGroupFunc makes a group's saved state durable before the metastore
// saves it: sg after a completed rebalance (or a transition to Empty), or,
// with deleted set, a tombstone for the group (its offsets get their own
// tombstones through PersistFunc). Same contract as PersistFunc.
type PersistGroupFunc func(ctx context.Context, sg metastore.Group, deleted bool) error

// PersistTxnFunc makes one TxnOffsetCommit durable before it is applied:
// the offsets of group, committed by producerID at epoch inside its
// transaction, written as a transactional batch. It returns the log offset
// of the batch (it orders the group's pending offsets) once the records
// are committed, or an error; ctx bounds the wait. Errors as PersistFunc.
type PersistTxnFunc func(ctx context.Context, group string, producerID int64, epoch int16, offsets map[metastore.TopicPartition]metastore.CommittedOffset) (int64, error)

// persistGroup runs the PersistGroup hook, bounded by persistTimeout, and
// returns its error, marked for errcode.Code (appendErr).
func (c *Coordinator) persistGroup(sg metastore.Group, deleted bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), persistTimeout)
	defer cancel()
	if err := c.opts.PersistGroup(ctx, sg, deleted); err != nil {
		c.log.Warn("group: persist group state", "group", sg.Name, "err", err)
		return appendErr(err)
	}
	return nil
}

// putGroup saves sg: through PersistGroup first, then in the metastore.
// Its error is marked for errcode.Code by storeErr. REQUIRES: the
// group's mu held.
func (c *Coordinator) putGroup(sg metastore.Group) error {
	if err := c.persistGroup(sg, false); err != nil {
		return err
	}
	return c.store.PutGroup(sg)
}

// ownerErr is the ownership part of validateGroup: nil when this
// coordinator serves name.
func (c *Coordinator) ownerErr(name string) error {
	owned, loading := c.opts.Owns(name)
	switch {
	case !owned:
		return errNotCoordinator
	case loading:
		return errLoadInProgress
	}
	return nil
}

// persist runs the Persist hook and returns its error for the commit,
// marked for errcode.Code (nil on success; nothing to write is a success).
func (c *Coordinator) persist(ctx context.Context, name string, offsets map[metastore.TopicPartition]metastore.CommittedOffset, deleted []metastore.TopicPartition) error {
	if len(offsets) == 0 && len(deleted) == 0 {
		return nil
	}
	if err := c.opts.Persist(ctx, name, offsets, deleted); err != nil {
		c.log.Warn("group: persist offsets", "group", name, "err", err)
		return appendErr(err)
	}
	return nil
}

// Reload replaces the in-memory state of every group for which match
// returns true by what the metastore holds (saved state and offsets, as New
// loads them; members get fresh session timers), after package offsets
// replayed that part of __consumer_offsets into it. Members of a replaced group waiting in JoinGroup or SyncGroup are
// answered NOT_COORDINATOR. Safe for concurrent use.
func (c *Coordinator) Reload(match func(group string) bool) error {
	saved, err := c.store.ListGroups()
	if err != nil {
		return fmt.Errorf("group: reload: %w", err)
	}
	names, err := c.store.ListOffsetGroups()
	if err != nil {
		return fmt.Errorf("group: reload: %w", err)
	}
	fresh := map[string]*group{}
	for _, sg := range saved {
		if match(sg.Name) {
			if g := fromStore(sg); g.state != stateDead {
				fresh[sg.Name] = g
			}
		}
	}
	for _, name := range names {
		if !match(name) {
			continue
		}
		offs, err := c.store.FetchOffsets(name)
		if err != nil {
			return fmt.Errorf("group: reload offsets of %q: %w", name, err)
		}
		g := fresh[name]
		if g == nil {
			g = newGroup(name, c.clock.Now())
			fresh[name] = g
		}
		g.offsets = offs
	}
	if err := c.loadPending(fresh, match); err != nil {
		return fmt.Errorf("group: reload: %w", err)
	}
	c.drop(match, fresh)
	return nil
}

// Unload drops every group for which match returns true from memory (this
// broker stopped leading their offsets partition). Waiting members are
// answered NOT_COORDINATOR. The metastore is left as it is: a later Reload
// follows a fresh replay. Safe for concurrent use.
func (c *Coordinator) Unload(match func(group string) bool) {
	c.drop(match, nil)
	c.unloadConsumerGroups(match)
	c.unloadShareGroups(match)
}

// drop removes the groups matching match and installs repl in their place.
func (c *Coordinator) drop(match func(string) bool, repl map[string]*group) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	var gone []*group
	for name, g := range c.groups {
		if match(name) {
			gone = append(gone, g)
			delete(c.groups, name)
		}
	}
	for name, g := range repl {
		c.groups[name] = g
		g.mu.Lock()
		for _, m := range g.members {
			c.scheduleHeartbeatLocked(g, m, m.sessionTimeout)
		}
		g.mu.Unlock()
	}
	c.mu.Unlock()
	for _, g := range gone {
		g.mu.Lock()
		g.stopTimersLocked()
		for _, m := range g.members {
			stopTimer(m.hbTimer)
			m.hbSeq++
			answerJoin(m, joinResult{err: errNotCoordinator, memberID: m.id, generation: -1})
			answerSync(m, syncResult{err: errNotCoordinator})
		}
		for _, p := range g.pending {
			stopTimer(p.timer)
		}
		g.state = stateDead
		g.mu.Unlock()
	}
}

// persistTimeout bounds the wait for tombstones written outside a client's
// request (OffsetDelete, DeleteGroups, expiry).
const persistTimeout = 30 * time.Second

// persistDeletes writes tombstones for tps through the Persist hook.
func (c *Coordinator) persistDeletes(name string, tps []metastore.TopicPartition) error {
	if len(tps) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), persistTimeout)
	defer cancel()
	return c.persist(ctx, name, nil, tps)
}
