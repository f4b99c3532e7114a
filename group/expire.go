package group

import (
	"fmt"
	"time"

	"github.com/sluice/sluice/metastore"
)

// Offset retention (offsets.retention.minutes), as Kafka's
// GroupMetadata.removeExpiredOffsets decides it, checked by a periodic
// sweep (offsets.retention.check.interval.ms):
//
//   - a group with a protocol type and no members: every offset expires once
//     the group has been Empty for the retention, measured from the later of
//     its last state change and the offset's commit (Kafka uses the state
//     change alone; an anonymous commit into an Empty group would then be
//     born expired);
//   - a Stable consumer group: offsets of topics no member subscribes to
//     expire by commit time;
//   - a group used only for offsets (no protocol type): by commit time;
//   - an offset committed with an explicit retention (OffsetCommit v2-v4)
//     expires at commit time + that retention, in the cases above.
//
// An Empty group left without offsets is deleted (Dead); pending
// transactional offsets neither expire nor let their group die (txn.go).

// scheduleSweepLocked arms the next periodic sweep.
// REQUIRES: c.mu held.
func (c *Coordinator) scheduleSweepLocked() {
	if c.opts.RetentionCheckInterval < 0 || c.closed {
		return
	}
	c.sweep = c.clock.AfterFunc(c.opts.RetentionCheckInterval, func() {
		if _, err := c.ExpireOffsets(); err != nil {
			c.log.Warn("group: offset expiry sweep", "err", err)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.scheduleSweepLocked()
	})
}

// ExpireOffsets runs the retention sweep now and returns how many offsets it
// deleted. The periodic sweep calls it; tools and tests may too. A store
// failure on one group is returned after the other groups were swept.
func (c *Coordinator) ExpireOffsets() (int, error) {
	if err := c.status(); err != nil {
		return 0, nil
	}
	groups := c.groupList()
	now := c.clock.Now()
	total := 0
	var firstErr error
	for _, g := range groups {
		g.mu.Lock()
		n, dead, err := c.expireLocked(g, now)
		g.mu.Unlock()
		total += n
		if err != nil && firstErr == nil {
			firstErr = err
		}
		if dead {
			c.forget(g)
		}
	}
	return total, firstErr
}

// expireLocked deletes g's expired offsets and, if g is Empty and has none
// left, g itself. It returns the number of offsets deleted and whether g
// died.
// REQUIRES: g.mu held.
func (c *Coordinator) expireLocked(g *group, now time.Time) (int, bool, error) {
	var base func(o metastore.CommittedOffset) time.Time
	subscribed := func(string) bool { return false }
	switch {
	case g.state == stateDead:
		return 0, false, nil
	case g.protocolType != "" && g.state == stateEmpty:
		base = func(o metastore.CommittedOffset) time.Time {
			if o.CommitTime.After(g.stateTime) {
				return o.CommitTime
			}
			return g.stateTime
		}
	case g.protocolType == consumerProtocolType && g.state == stateStable && g.subscribed != nil:
		base = func(o metastore.CommittedOffset) time.Time { return o.CommitTime }
		subscribed = func(t string) bool { _, ok := g.subscribed[t]; return ok }
	case g.protocolType == "":
		base = func(o metastore.CommittedOffset) time.Time { return o.CommitTime }
		// A consumer group's (KIP-848) offsets live here: its members'
		// topics do not expire.
		if sub := c.consumerSubscribed(g.name); sub != nil {
			subscribed = sub
		}
	default:
		return 0, false, nil
	}
	var expired []metastore.TopicPartition
	for tp, o := range g.offsets {
		if subscribed(tp.Topic) {
			continue
		}
		if !o.ExpireTime.IsZero() {
			if !now.Before(o.ExpireTime) {
				expired = append(expired, tp)
			}
		} else if now.Sub(base(o)) >= c.opts.OffsetsRetention {
			expired = append(expired, tp)
		}
	}
	if len(expired) > 0 {
		if err := c.persistDeletes(g.name, expired); err != nil {
			return 0, false, fmt.Errorf("group: expire offsets of %q: tombstones not written: %w", g.name, err)
		}
		if err := c.store.DeleteOffsets(g.name, expired); err != nil {
			return 0, false, err
		}
		for _, tp := range expired {
			delete(g.offsets, tp)
		}
		c.log.Info("group: expired offsets", "group", g.name, "partitions", len(expired))
	}
	if g.state == stateEmpty && len(g.offsets) == 0 && len(g.pending) == 0 && len(g.pendingTxn) == 0 {
		return len(expired), c.killLocked(g) == nil, nil
	}
	return len(expired), false, nil
}
