package server

// Share groups (KIP-932), the data path: the seam to the membership side,
// the share partitions' configuration and the share sessions.
//
// ShareFetch (78_share_fetch.go) and ShareAcknowledge
// (79_share_acknowledge.go) read and change share partitions
// (group/share); the share group's membership (ShareGroupHeartbeat,
// the assignor, the group's configs) lives behind ShareMembership. Without
// one (Options.ShareMembership nil) the broker serves neither API and
// ApiVersions does not list them.
//
// Share sessions are Kafka's ShareSessionCache: one per (group, member),
// opened by a ShareFetch with epoch 0 naming its partitions, then each
// request carries the session's next epoch (ShareFetch may add partitions
// and forget others; ShareAcknowledge only acknowledges), and epoch -1
// closes it. A request for a session that does not exist is answered
// SHARE_SESSION_NOT_FOUND, one with the wrong epoch
// INVALID_SHARE_SESSION_EPOCH. A session belongs to the connection that
// opened it: when that connection closes (or the session is closed with
// epoch -1), the member's acquired records in the session's partitions are
// released at once, as Kafka does, rather than waiting for their locks to
// expire. A session replaced by a new epoch-0 request releases nothing: the
// member's records stay its own to acknowledge.

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/group/share"
	"github.com/sluice/sluice/sharecoord"
)

// ShareMembership is what the data path needs of the share groups'
// membership (the share group coordinator). Implementations must be safe
// for concurrent use and answer without blocking on the network.
type ShareMembership interface {
	// Member reports whether memberID is a member of share group groupID
	// and the partitions assigned to it, by topic id.
	Member(groupID, memberID string) (assigned map[[16]byte][]int32, ok bool)
	// GroupConfig returns the group's effective configuration: its own
	// share.* configs over the broker's group.share.* defaults.
	GroupConfig(groupID string) ShareGroupConfig
}

// ShareGroupConfig is a share group's configuration as the data path
// applies it.
type ShareGroupConfig struct {
	RecordLockDuration     time.Duration // share.record.lock.duration.ms
	DeliveryCountLimit     int           // share.delivery.count.limit
	PartitionMaxRecordLock int           // share.partition.max.record.locks
	// AutoOffsetReset is share.auto.offset.reset: "latest" (default),
	// "earliest" or "by_duration:<ISO-8601 duration>".
	AutoOffsetReset string
	// ReadCommitted is share.isolation.level=read_committed.
	ReadCommitted bool
	// RenewEnabled is share.renew.acknowledge.enable (KIP-1222).
	RenewEnabled bool
	// Redelivery backoff, Sluice's own (share.redelivery.backoff.ms,
	// share.redelivery.backoff.max.ms, share.redelivery.backoff.multiplier):
	// a released or lock-expired record stays unavailable for
	// min(backoff * multiplier^(deliveries-1), max). 0 disables it.
	RedeliveryBackoff           time.Duration
	RedeliveryBackoffMax        time.Duration
	RedeliveryBackoffMultiplier float64
	// KIP-1191's dead-letter topic ("" none) and whether a dead letter
	// copies the record's key and value (share_dlq.go).
	DLQTopic      string
	DLQCopyRecord bool
}

// defaultShareGroupConfig is the broker's group.share.* values, for a
// group the membership side has no configs for.
func (s *Server) defaultShareGroupConfig() ShareGroupConfig {
	c := s.currentConfig()
	return ShareGroupConfig{
		RecordLockDuration:     time.Duration(c.GroupShare.RecordLockDurationMs) * time.Millisecond,
		DeliveryCountLimit:     c.GroupShare.DeliveryCountLimit,
		PartitionMaxRecordLock: c.GroupShare.PartitionMaxRecordLocks,
		AutoOffsetReset:        "latest",
		RenewEnabled:           true, // share.renew.acknowledge.enable's default (Kafka's GroupConfig)
	}
}

// partitionConfig is the group config in the state machine's terms.
// Values a membership side left unset (0) take Kafka's defaults, so that
// the in-flight bound and the limit always hold.
func (g ShareGroupConfig) partitionConfig() share.Config {
	if g.RecordLockDuration <= 0 {
		g.RecordLockDuration = 30 * time.Second
	}
	if g.DeliveryCountLimit <= 0 {
		g.DeliveryCountLimit = 5
	}
	if g.PartitionMaxRecordLock <= 0 {
		g.PartitionMaxRecordLock = 2000
	}
	return share.Config{
		LockDuration:       g.RecordLockDuration,
		DeliveryCountLimit: int16(min(g.DeliveryCountLimit, 1<<15-1)),
		MaxRecordLocks:     g.PartitionMaxRecordLock,
		RenewEnabled:       g.RenewEnabled,
		Backoff: share.Backoff{
			Initial:    g.RedeliveryBackoff,
			Max:        g.RedeliveryBackoffMax,
			Multiplier: g.RedeliveryBackoffMultiplier,
		},
	}
}

// isoDuration matches the ISO-8601 durations by_duration takes
// (Java's Duration.parse: PnDTnHnMn.nS, all parts optional).
var isoDuration = regexp.MustCompile(`^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$`)

// parseByDuration parses the duration of share.auto.offset.reset's
// by_duration:<duration>.
func parseByDuration(v string) (time.Duration, error) {
	m := isoDuration.FindStringSubmatch(v)
	if m == nil || v == "P" || v == "PT" {
		return 0, fmt.Errorf("server: %q is not an ISO-8601 duration", v)
	}
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute} {
		if m[i+1] != "" {
			n, err := strconv.ParseInt(m[i+1], 10, 32)
			if err != nil {
				return 0, err
			}
			d += time.Duration(n) * unit
		}
	}
	if m[4] != "" {
		f, err := strconv.ParseFloat(m[4], 64)
		if err != nil || f > 1e9 {
			return 0, fmt.Errorf("server: %q is not an ISO-8601 duration", v)
		}
		d += time.Duration(f * float64(time.Second))
	}
	return d, nil
}

// maxShareSessions bounds the share sessions a broker keeps (Kafka's
// group.share.max.share.sessions default); one more is
// SHARE_SESSION_LIMIT_REACHED.
const maxShareSessions = 2000

// shareSessionKey names a share session.
type shareSessionKey struct{ group, member string }

// sharePart is one partition of a share session.
type sharePart struct {
	topic     [16]byte
	partition int32
}

// shareSession is one member's share session.
type shareSession struct {
	epoch int32 // the epoch the next request must carry
	parts []sharePart
	set   map[sharePart]struct{} // parts, for lookups; nil when parts is empty
	owner *conn                  // the connection that opened it; nil in direct handler tests
}

func (ss *shareSession) has(p sharePart) bool {
	_, ok := ss.set[p]
	return ok
}

func (ss *shareSession) add(p sharePart) {
	if ss.set == nil {
		ss.set = map[sharePart]struct{}{}
	}
	ss.set[p] = struct{}{}
	ss.parts = append(ss.parts, p)
}

// forget removes the partitions in gone, in one pass.
func (ss *shareSession) forget(gone map[sharePart]struct{}) {
	if len(gone) == 0 {
		return
	}
	kept := ss.parts[:0]
	for _, p := range ss.parts {
		if _, drop := gone[p]; drop {
			delete(ss.set, p)
			continue
		}
		kept = append(kept, p)
	}
	ss.parts = kept
}

// bump moves the session to its next epoch (wrapping to 1, never 0 or -1).
func (ss *shareSession) bump() {
	if ss.epoch == 1<<31-1 {
		ss.epoch = 1
		return
	}
	ss.epoch++
}

// shareData is the server's share-group data path state.
type shareData struct {
	members ShareMembership // nil: share groups are not served
	parts   *share.Manager
	// coord is this broker's share coordinator, persister the way to
	// every share coordinator (share_state.go, share_persister.go).
	coord     *sharecoord.Coordinator
	persister *sharePersister
	// dlq is the dead-letter bookkeeping of the share partitions held
	// here (share_dlq.go), openedAt the leader epoch each was opened at
	// (share_state.go); both under dlqMu.
	dlqMu    sync.Mutex
	dlq      map[share.Key]*sharecoord.DLQState
	openedAt map[share.Key]int32
	// idleStats are the counters of the share partitions forgotten when
	// their group went idle here (shareGroupIdle), carried on when they
	// open again and still exported meanwhile; under dlqMu.
	idleStats map[share.Key]share.Stats

	// parked counts the share fetches waiting in a long poll (tests).
	parked atomic.Int32
	// Dead letters written to and skipped for (no topic) dead-letter
	// topics (share_dlq.go).
	dlqWritten, dlqSkipped atomic.Int64

	mu       sync.Mutex
	sessions map[shareSessionKey]*shareSession
}

func newShareData(m ShareMembership) *shareData {
	return &shareData{members: m, parts: share.NewManager(), sessions: map[shareSessionKey]*shareSession{}}
}

// shareDataConfig is group's configuration, the broker's when no membership
// side knows it.
func (s *Server) shareDataConfig(group string) ShareGroupConfig {
	if s.share.members != nil {
		return s.share.members.GroupConfig(group)
	}
	return s.defaultShareGroupConfig()
}

// releaseSession releases what member holds in the session's partitions.
func (s *Server) releaseSession(k shareSessionKey, ss *shareSession) {
	if ss == nil || len(ss.parts) == 0 {
		return
	}
	cfg := s.shareDataConfig(k.group).partitionConfig()
	now := s.now()
	released := 0
	for _, p := range ss.parts {
		h := s.share.parts.Lookup(share.Key{Group: k.group, Topic: p.topic, Partition: p.partition})
		if h == nil {
			continue
		}
		key := share.Key{Group: k.group, Topic: p.topic, Partition: p.partition}
		h.Lock()
		if n := h.P.ReleaseMember(k.member, now, cfg); n > 0 {
			released += n
			if err := s.sharePersist(context.Background(), key, h.P); err != nil {
				s.log.Warn("server: share state not written after a release", "group", k.group, "partition", p.partition, "err", err)
			}
		}
		h.Unlock()
	}
	if released > 0 {
		s.share.parts.Notify()
	}
}

// shareConnClosed closes the share sessions c opened, releasing their
// records. Called when a connection is unregistered.
func (s *Server) shareConnClosed(c *conn) {
	if s.share == nil {
		return
	}
	type closed struct {
		k  shareSessionKey
		ss *shareSession
	}
	var gone []closed
	s.share.mu.Lock()
	for k, ss := range s.share.sessions {
		if ss.owner == c {
			gone = append(gone, closed{k, ss})
			delete(s.share.sessions, k)
		}
	}
	s.share.mu.Unlock()
	groups := map[string]bool{}
	for _, g := range gone {
		s.releaseSession(g.k, g.ss)
		groups[g.k.group] = true
	}
	for g := range groups {
		s.shareGroupIdle(g) // share_state.go
	}
}

// shareMemberGone is for the membership side: member left group (a
// ShareGroupHeartbeat with epoch -1, a session timeout, the group's
// deletion). Its share session ends and everything it holds in the group's
// share partitions is released at once, as Kafka does.
func (s *Server) shareMemberGone(group, member string) {
	if s.share == nil {
		return
	}
	k := shareSessionKey{group, member}
	s.share.mu.Lock()
	delete(s.share.sessions, k)
	s.share.mu.Unlock()
	var parts []sharePart
	s.share.parts.Each(group, func(key share.Key, _ *share.Held) {
		parts = append(parts, sharePart{key.Topic, key.Partition})
	})
	s.releaseSession(k, &shareSession{parts: parts})
	s.shareGroupIdle(group) // share_state.go
}
