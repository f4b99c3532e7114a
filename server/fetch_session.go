package server

// Incremental fetch sessions (KIP-227), after Kafka's FetchSession.scala.
//
// A fetch request carries (session id, session epoch):
//
//	id 0,  epoch -1  full fetch, no session (sessionless)
//	id 0,  epoch 0   full fetch that asks for a session: if the cache admits
//	                 one, the answer carries its new id and the session holds
//	                 every partition of the request with its fetch offset,
//	                 log start offset, max bytes and current leader epoch
//	id>0,  epoch>0   incremental fetch: the request names only the partitions
//	                 added to or changed in the session, and ForgottenTopics
//	                 the ones to drop; the broker reads the whole session
//	id>0,  epoch 0   close session id and ask for a new one (full fetch)
//	id>0,  epoch -1  close session id; sessionless full fetch
//
// The epoch of an incremental request must be the session's: 1 after the
// creating fetch, then one more per incremental request accepted (after
// MaxInt32 comes 1). Unknown id: FETCH_SESSION_ID_NOT_FOUND; wrong epoch:
// INVALID_FETCH_SESSION_EPOCH; a session made with topic ids (v13+) used
// by names, or the other way round: FETCH_SESSION_TOPIC_ID_ERROR. The
// session is left as it was by a refused request. An incremental request
// that leaves the session empty closes it and is answered sessionless.
//
// An incremental answer holds only the partitions with something to say
// (sessionPartition.update, Kafka's CachedPartition.maybeUpdateResponseData):
// records, a changed high watermark, last stable offset or log start
// offset, an error, a preferred read replica or a diverging epoch. Kafka
// does not look at the last stable offset; we do, so a read_committed
// consumer always learns it (a few more partitions answered, never fewer).
// A partition that returned records moves to the end of the session's
// order, so that under max_bytes the others get their turn next time.
//
// Quiet partitions. Kafka reads every partition of a session at each
// incremental fetch, to answer the few that changed: at 10,000 partitions
// and four consumers that is 2,500 reads a fetch, most finding nothing,
// and it was 30% of the broker's CPU (BENCHMARKS.md). A consumer's
// partition whose last answer told the client everything (no records, no
// error, the fetch offset at or past the high watermark, or the last
// stable offset for read_committed) is quiet: the next incremental fetch
// that does not name it leaves it out of its read while nothing that
// would change its answer happened, which sessionPartition.stillQuiet
// checks in O(1) without touching the log: the partition's WakeGen
// (truncation, leadership, ISR, a failed append, close), its high
// watermark and last stable offset against what the client was told,
// engine.StartMoves (any log start offset moved anywhere in the process)
// and the isolation level. The handler then checks that the topic still
// resolves, is authorized and serves the same partition object, or reads
// it. A fetch about to wait in the purgatory first brings every quiet
// partition back into its read and watches them all, so an append to one
// wakes it as before. The answers are the ones a full read gives
// (TestFetchSessionModel, TestFetchSessionQuietPartitions); followers'
// sessions are read whole.
//
// The cache (fetchSessionCache) holds at most
// max.incremental.fetch.session.cache.slots sessions. When it is full a
// new session gets a slot by evicting, as Kafka's FetchSessionCacheShard
// does: the least recently used session if unused for sessionEvictAfter
// (Kafka's 120 s); else the smallest "evictable" session if the new one is
// at least as big: a follower's (privileged) session may evict any
// consumer's and any session older than sessionEvictAfter, a consumer's
// only sessions older than sessionEvictAfter; among them the smallest
// (consumers' before followers', then fewer partitions, then lower id).
// Otherwise no session is made (answer id 0): the client keeps sending full
// fetches. The cache is small (slots, 1000 by default) so eviction scans
// it rather than keeping Kafka's sorted indexes.
//
// Memory: a session holds at most sessionMaxPartitions partitions, and
// all sessions together at most sessionCacheMaxPartitions (~170 bytes
// each, so ~170 MiB in all, whatever the slots). An incremental request
// that would grow its session past either bound closes it
// (FETCH_SESSION_ID_NOT_FOUND, after which clients fall back to full
// fetches, as they do when their session was evicted); a full fetch naming
// more than sessionMaxPartitions creates none, and one that does not fit
// in the budget creates none unless sessions unused for sessionEvictAfter
// can be evicted to make room (answer id 0, as when the slots are full).
// Both bounds count partitions, not client-chosen counts: what a request
// adds to a session was decoded from its frame (bounded by
// socket.request.max.bytes) before we see it. But an incremental fetch of
// a session of n partitions is served like a full fetch of n partitions
// (r.Topics, the targets and the answer, ~650 bytes a partition) from a
// request of a few bytes, outside queued.max.request.bytes: the bounds
// above are what bound that work.
//
// Concurrency: each session has its own mutex (fetchSession.mu) for its
// epoch and partitions; the cache's mutex (fetchSessionCache.mu) guards
// the map of sessions and what eviction and stats read: each session's
// last use and size (Kafka's cachedSize) and their total. Only O(1) work
// and eviction's scan of the slots happen under the cache's mutex; the
// O(session size) work happens under the session's alone, so one big
// session does not stall every other fetch. Lock order: a session's mutex,
// then the cache's, never the other way round. A request takes its
// session's mutex twice: in begin, to check and apply the request and
// bump the epoch (so a duplicate of the request is refused), and in
// finish, to record what the answer told the client. If another request
// moved the session's epoch in between (a client racing itself), finish
// answers INVALID_FETCH_SESSION_EPOCH with no partitions, as Kafka does.

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/replica"
	"github.com/sluice/sluice/server/fetchresp"
)

const (
	// sessionEvictAfter is Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS.
	sessionEvictAfter = 120 * time.Second
	// sessionMaxPartitions bounds one session's partitions (~170 bytes
	// each kept, ~650 bytes allocated per incremental fetch).
	sessionMaxPartitions = 1 << 18
	// sessionCacheMaxPartitions bounds the partitions of all sessions
	// together: ~170 MiB kept at most, whatever the slots.
	sessionCacheMaxPartitions = 1 << 20

	sessionInitialEpoch = 0
	sessionFinalEpoch   = -1
)

// nextSessionEpoch is Kafka's FetchMetadata.nextEpoch.
func nextSessionEpoch(e int32) int32 {
	switch {
	case e < 0:
		return sessionFinalEpoch
	case e == math.MaxInt32:
		return 1
	default:
		return e + 1
	}
}

// sessionKey names a partition of a session: by topic name in a name
// session (v7-v12), by topic id in a topic-id session (v13+).
type sessionKey struct {
	topic     string
	id        [16]byte
	partition int32
}

// sessionPartition is one partition of a fetchSession: what the client
// last asked for, and what it was last told.
type sessionPartition struct {
	key sessionKey

	// From the client's requests.
	fetchOffset, logStartOffset             int64
	maxBytes, leaderEpoch, lastFetchedEpoch int32

	// From our answers; -1 when unknown or after an error, so that the
	// next good answer is sent.
	highWatermark, lastStableOffset, localLogStart int64

	// quiet: the last answer told the client all there is (no records,
	// no error, its fetch offset at or past the high watermark, or the
	// last stable offset when committed), so the next incremental fetch
	// leaves it out while stillQuiet holds. part is the partition read,
	// gen its WakeGen and starts engine.StartMoves, both loaded before
	// that read.
	quiet, committed bool
	part             *replica.Partition
	gen, starts      uint64

	// The session's read order (fetchSession.head).
	prev, next *sessionPartition
}

// note records, after update, whether the answer op to ft left p quiet.
func (p *sessionPartition) note(ft *fetchTarget, op *fetchresp.Partition) {
	bound := op.HighWatermark
	if ft.committed {
		bound = op.LastStableOffset
	}
	p.quiet = ft.read && op.ErrorCode == 0 && op.Records.Len() == 0 &&
		op.PreferredReadReplica < 0 && op.DivergingEpoch == nil && bound >= 0 && ft.offset >= bound
	p.part = nil
	if p.quiet {
		p.part, p.gen, p.starts, p.committed = ft.p, ft.gen, ft.starts, ft.committed
	}
}

// stillQuiet reports whether a fetch of p, quiet, would answer nothing
// new: nothing woke its partition's watchers (truncation, leadership,
// close: WakeGen), no log start offset moved anywhere (starts), its high
// watermark and last stable offset are what the client was told, and the
// request reads at the same isolation level. The client's fetch offset,
// max bytes and leader epoch are unchanged too: a request that names p
// clears quiet (apply).
func (p *sessionPartition) stillQuiet(starts uint64, committed bool) bool {
	return p.committed == committed && p.starts == starts && p.part.WakeGen() == p.gen &&
		p.part.HighWatermark() == p.highWatermark && p.part.LastStableOffset() == p.lastStableOffset
}

// request is p as a partition of a fetch request.
func (p *sessionPartition) request() kmsg.FetchRequestTopicPartition {
	return kmsg.FetchRequestTopicPartition{
		Partition:          p.key.partition,
		CurrentLeaderEpoch: p.leaderEpoch,
		FetchOffset:        p.fetchOffset,
		LastFetchedEpoch:   p.lastFetchedEpoch,
		LogStartOffset:     p.logStartOffset,
		PartitionMaxBytes:  p.maxBytes,
	}
}

// update records what op tells the client about p and reports whether op
// must be in an incremental answer.
func (p *sessionPartition) update(op *fetchresp.Partition) bool {
	respond := op.Records.Len() > 0
	if p.highWatermark != op.HighWatermark {
		p.highWatermark, respond = op.HighWatermark, true
	}
	if p.lastStableOffset != op.LastStableOffset {
		p.lastStableOffset, respond = op.LastStableOffset, true
	}
	if p.localLogStart != op.LogStartOffset {
		p.localLogStart, respond = op.LogStartOffset, true
	}
	if op.PreferredReadReplica >= 0 || op.DivergingEpoch != nil {
		respond = true
	}
	if op.ErrorCode != 0 {
		p.highWatermark, respond = -1, true
	}
	return respond
}

// fetchSession is one incremental fetch session. id, privileged, topicIDs
// and created never change; the rest is guarded by fetchSessionCache.mu.
type fetchSession struct {
	id         int32
	privileged bool // a follower's
	topicIDs   bool // made by a v13+ fetch: partitions keyed by topic id
	created    time.Time

	// Guarded by fetchSessionCache.mu.
	lastUsed time.Time
	// size is len(parts) as the cache counts it in fetchSessionCache.parts
	// (Kafka's cachedSize): set when a request changed parts, 0 once gone.
	size int
	gone bool // removed from the cache

	// mu guards the rest. Taken before fetchSessionCache.mu, never after.
	mu    sync.Mutex
	epoch int32 // what the next incremental request must carry
	parts map[sessionKey]*sessionPartition
	// head and tail are the read order: every partition of parts, once.
	head, tail *sessionPartition
}

// REQUIRES: s.mu held.
func (s *fetchSession) pushBack(p *sessionPartition) {
	p.prev, p.next = s.tail, nil
	if s.tail != nil {
		s.tail.next = p
	} else {
		s.head = p
	}
	s.tail = p
}

// REQUIRES: s.mu held; p in s.
func (s *fetchSession) unlink(p *sessionPartition) {
	if p.prev != nil {
		p.prev.next = p.next
	} else {
		s.head = p.next
	}
	if p.next != nil {
		p.next.prev = p.prev
	} else {
		s.tail = p.prev
	}
	p.prev, p.next = nil, nil
}

// fetchSessionCache holds the broker's fetch sessions, by id (ids are
// global to the broker, not per connection). Safe for concurrent use; a
// nil cache or one with no slots keeps no sessions.
type fetchSessionCache struct {
	slots      int
	evictAfter time.Duration
	maxParts   int // sessionMaxPartitions; tests lower it
	maxTotal   int // sessionCacheMaxPartitions; tests lower it

	mu       sync.Mutex
	sessions map[int32]*fetchSession
	// parts is the sum of the sessions' size. Invariant: parts <= maxTotal.
	parts int
	// evictions counts sessions evicted to make room (tests, metrics).
	evictions int64
	// skipped counts the quiet partitions incremental fetches left out
	// of their first read (tests).
	skipped atomic.Int64
}

func newFetchSessionCache(slots int) *fetchSessionCache {
	return &fetchSessionCache{slots: slots, evictAfter: sessionEvictAfter, maxParts: sessionMaxPartitions,
		maxTotal: sessionCacheMaxPartitions, sessions: map[int32]*fetchSession{}}
}

// fetchSessionKind is what begin made of a request's session metadata.
type fetchSessionKind uint8

const (
	fetchSessionless fetchSessionKind = iota // answer with session id 0
	fetchFull                                // full fetch; finish may create a session
	fetchIncremental                         // r.Topics is the session's partitions
)

// fetchSessionCtx carries one Fetch from begin to finish.
type fetchSessionCtx struct {
	kind       fetchSessionKind
	errCode    int16 // a session error: answer it alone, with session id 0
	privileged bool
	req        *kmsg.FetchRequest
	sess       *fetchSession
	epoch      int32                 // incremental: the session's epoch after this request
	parts      [][]*sessionPartition // incremental: r.Topics' partitions, index for index
	// quiet: incremental, the session's partitions left out of r.Topics[i]
	// because they have nothing new (stillQuiet); quietLeft counts them.
	quiet     [][]*sessionPartition
	quietLeft int
}

// wake adds to r.Topics[i] the partitions of quiet[i] for which keep is
// false (all of them when keep is nil) and returns how many it added; the
// caller resolves and reads them with the rest. keep runs with the
// session's mutex held: a client racing itself may be changing the
// session's partitions (its answer is refused at finish then, but what
// it reads must be whole).
func (fc *fetchSessionCtx) wake(i int, keep func(*sessionPartition) bool) int {
	if i >= len(fc.quiet) || len(fc.quiet[i]) == 0 {
		return 0
	}
	fc.sess.mu.Lock()
	defer fc.sess.mu.Unlock()
	q, rt, n := fc.quiet[i][:0], &fc.req.Topics[i], 0
	for _, p := range fc.quiet[i] {
		if keep != nil && keep(p) {
			q = append(q, p)
			continue
		}
		rt.Partitions = append(rt.Partitions, p.request())
		fc.parts[i] = append(fc.parts[i], p)
		n++
	}
	clear(fc.quiet[i][len(q):])
	fc.quiet[i] = q
	fc.quietLeft -= n
	return n
}

// begin applies the session metadata of fetch r (follower: from a replica).
// For an incremental fetch it updates the session with r's partitions and
// forgotten topics, then replaces r.Topics with every partition of the
// session, which is what the handler reads. errCode set: answer that error
// and nothing else.
func (c *fetchSessionCache) begin(r *kmsg.FetchRequest, follower bool, now time.Time) fetchSessionCtx {
	fc := fetchSessionCtx{privileged: follower, req: r}
	if r.Version < 7 {
		return fc
	}
	id, epoch := r.SessionID, r.SessionEpoch
	if epoch == sessionInitialEpoch || epoch == sessionFinalEpoch {
		if id != 0 && c != nil {
			c.mu.Lock()
			if s := c.sessions[id]; s != nil {
				c.removeLocked(s)
			}
			c.mu.Unlock()
		}
		if epoch == sessionInitialEpoch {
			fc.kind = fetchFull
		}
		return fc
	}
	if c == nil {
		fc.errCode = kerr.FetchSessionIDNotFound.Code
		return fc
	}
	c.mu.Lock()
	s := c.sessions[id]
	c.mu.Unlock()
	if s == nil {
		fc.errCode = kerr.FetchSessionIDNotFound.Code
		return fc
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.epoch != epoch:
		fc.errCode = kerr.InvalidFetchSessionEpoch.Code
		return fc
	case s.topicIDs != (r.Version >= 13):
		fc.errCode = kerr.FetchSessionTopicIDError.Code
		return fc
	}
	s.apply(r)
	c.mu.Lock()
	fc.errCode = c.resizeLocked(s, now)
	c.mu.Unlock()
	if fc.errCode != 0 {
		return fc
	}
	if len(s.parts) == 0 {
		r.Topics = nil
		return fc
	}
	s.epoch = nextSessionEpoch(s.epoch)
	fc.kind, fc.sess, fc.epoch = fetchIncremental, s, s.epoch
	// The quiet partitions stay out of r.Topics: the handler brings them
	// back when their topic fails or it waits (wake). A topic whose
	// partitions are all quiet still gets its entry, so that it is
	// resolved and authorized as before.
	starts, committed := engine.StartMoves(), r.IsolationLevel == 1
	var topics []kmsg.FetchRequestTopic
	for p := s.head; p != nil; p = p.next {
		if n := len(topics); n == 0 || topics[n-1].Topic != p.key.topic || topics[n-1].TopicID != p.key.id {
			topics = append(topics, kmsg.FetchRequestTopic{Topic: p.key.topic, TopicID: p.key.id})
			fc.parts = append(fc.parts, nil)
			fc.quiet = append(fc.quiet, nil)
		}
		i := len(topics) - 1
		if p.quiet && p.stillQuiet(starts, committed) {
			fc.quiet[i] = append(fc.quiet[i], p)
			fc.quietLeft++
			continue
		}
		p.quiet = false
		topics[i].Partitions = append(topics[i].Partitions, p.request())
		fc.parts[i] = append(fc.parts[i], p)
	}
	r.Topics = topics
	c.skipped.Add(int64(fc.quietLeft))
	return fc
}

// resizeLocked accounts for s after a request changed its partitions and
// marks it used at now. It returns FETCH_SESSION_ID_NOT_FOUND, having
// removed s, if s was evicted meanwhile or now holds more than maxParts
// partitions or more than the cache's budget leaves it; s emptied is
// removed with no error (the request is answered sessionless).
// REQUIRES: s.mu and c.mu held.
func (c *fetchSessionCache) resizeLocked(s *fetchSession, now time.Time) int16 {
	n := len(s.parts)
	switch {
	case s.gone:
		return kerr.FetchSessionIDNotFound.Code
	case n > c.maxParts || c.parts-s.size+n > c.maxTotal:
		c.removeLocked(s)
		return kerr.FetchSessionIDNotFound.Code
	case n == 0:
		c.removeLocked(s)
		return 0
	}
	c.parts += n - s.size
	s.size, s.lastUsed = n, now
	return 0
}

// removeLocked drops s from the cache.
// REQUIRES: c.mu held; s in c.
func (c *fetchSessionCache) removeLocked(s *fetchSession) {
	delete(c.sessions, s.id)
	c.parts -= s.size
	s.size, s.gone = 0, true
}

// apply adds or updates r's partitions in s and drops its forgotten ones
// (ones not in s are ignored), in Kafka's order: a partition both named
// and forgotten is dropped. It grows s by the partitions r names at most,
// which were decoded from a frame already; the caller checks the bounds
// after (resizeLocked), so a request that swaps partitions at a bound is
// fine.
// REQUIRES: s.mu held.
func (s *fetchSession) apply(r *kmsg.FetchRequest) {
	for i := range r.Topics {
		rt := &r.Topics[i]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			k := s.key(rt.Topic, rt.TopicID, rp.Partition)
			p := s.parts[k]
			if p == nil {
				p = &sessionPartition{key: k, highWatermark: -1, lastStableOffset: -1, localLogStart: -1}
				s.parts[k] = p
				s.pushBack(p)
			}
			p.fetchOffset, p.logStartOffset, p.quiet = rp.FetchOffset, rp.LogStartOffset, false
			p.maxBytes, p.leaderEpoch, p.lastFetchedEpoch = rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch
		}
	}
	for i := range r.ForgottenTopics {
		ft := &r.ForgottenTopics[i]
		for _, part := range ft.Partitions {
			k := s.key(ft.Topic, ft.TopicID, part)
			if p := s.parts[k]; p != nil {
				delete(s.parts, k)
				s.unlink(p)
			}
		}
	}
}

func (s *fetchSession) key(topic string, id [16]byte, partition int32) sessionKey {
	if s.topicIDs {
		return sessionKey{id: id, partition: partition}
	}
	return sessionKey{topic: topic, partition: partition}
}

// finish completes out, the answer to the fetch begun as fc (filled from
// fc.req.Topics through targets, index for index): it sets the session
// id, creates the session of a full fetch if the cache admits it, and cuts
// an incremental answer down to the partitions that have something to
// say, releasing what it drops.
func (c *fetchSessionCache) finish(fc *fetchSessionCtx, out *fetchresp.Response, targets [][]fetchTarget, now time.Time) {
	switch fc.kind {
	case fetchFull:
		out.SessionID = c.create(fc, out, targets, now)
	case fetchIncremental:
		s := fc.sess
		s.mu.Lock()
		defer s.mu.Unlock()
		out.SessionID = s.id
		if s.epoch != fc.epoch {
			releaseFetch(out)
			out.Topics, out.ErrorCode = nil, kerr.InvalidFetchSessionEpoch.Code
			return
		}
		kept := out.Topics[:0]
		for i, t := range out.Topics {
			parts := t.Partitions[:0]
			for j := range t.Partitions {
				op := &t.Partitions[j]
				p := fc.parts[i][j]
				respond := p.update(op)
				p.note(&targets[i][j], op)
				if !respond {
					op.Records.Release()
					continue
				}
				if op.Records.Len() > 0 && s.parts[p.key] == p {
					s.unlink(p)
					s.pushBack(p)
				}
				parts = append(parts, *op)
			}
			clear(t.Partitions[len(parts):])
			if len(parts) > 0 {
				t.Partitions = parts
				kept = append(kept, t)
			}
		}
		clear(out.Topics[len(kept):])
		out.Topics = kept
	}
}

// create makes a session of the full fetch fc answered by out and returns
// its id, or 0 if the cache has no room for it. Room is found (evicting if
// need be) before the session is built, and the session is built under
// its own mutex only.
func (c *fetchSessionCache) create(fc *fetchSessionCtx, out *fetchresp.Response, targets [][]fetchTarget, now time.Time) int32 {
	if c == nil || c.slots <= 0 {
		return 0
	}
	r := fc.req
	n := 0
	for i := range r.Topics {
		n += len(r.Topics[i].Partitions)
	}
	if n == 0 || n > c.maxParts || n > c.maxTotal {
		return 0
	}
	s := &fetchSession{privileged: fc.privileged, topicIDs: r.Version >= 13, created: now, lastUsed: now,
		epoch: nextSessionEpoch(sessionInitialEpoch)}
	// Nobody else can reach s until its id is answered, but lock order is
	// kept all the same.
	s.mu.Lock()
	defer s.mu.Unlock()
	c.mu.Lock()
	if !c.roomLocked(s.privileged, n, now) {
		c.mu.Unlock()
		return 0
	}
	for s.id == 0 || c.sessions[s.id] != nil {
		s.id = rand.Int32N(math.MaxInt32) + 1 // ids are 1..MaxInt32
	}
	c.sessions[s.id] = s
	s.size = n // an upper bound until built: keys repeated in r count once
	c.parts += n
	c.mu.Unlock()

	s.parts = make(map[sessionKey]*sessionPartition, n)
	all := make([]sessionPartition, n)
	n = 0
	for i := range r.Topics {
		rt := &r.Topics[i]
		for j := range rt.Partitions {
			rp, p := &rt.Partitions[j], &all[n]
			n++
			*p = sessionPartition{key: s.key(rt.Topic, rt.TopicID, rp.Partition),
				fetchOffset: rp.FetchOffset, logStartOffset: rp.LogStartOffset,
				maxBytes: rp.PartitionMaxBytes, leaderEpoch: rp.CurrentLeaderEpoch, lastFetchedEpoch: rp.LastFetchedEpoch,
				highWatermark: -1, lastStableOffset: -1, localLogStart: -1}
			p.update(&out.Topics[i].Partitions[j])
			if targets != nil {
				p.note(&targets[i][j], &out.Topics[i].Partitions[j])
			}
			if old := s.parts[p.key]; old != nil {
				s.unlink(old)
			}
			s.parts[p.key] = p
			s.pushBack(p)
		}
	}
	if len(s.parts) != n {
		c.mu.Lock()
		if !s.gone {
			c.parts += len(s.parts) - s.size
			s.size = len(s.parts)
		}
		c.mu.Unlock()
	}
	return s.id
}

// roomLocked makes room for a new session (privileged: a follower's) of
// size partitions and reports whether it did: within the cache's budget
// of partitions, by evicting sessions unused for evictAfter (least
// recently used first) if need be; then a slot, by Kafka's rules (see the
// file comment).
// REQUIRES: c.mu held.
func (c *fetchSessionCache) roomLocked(privileged bool, size int, now time.Time) bool {
	for c.parts+size > c.maxTotal {
		lru := c.lruLocked()
		if lru == nil || now.Sub(lru.lastUsed) <= c.evictAfter {
			return false
		}
		c.removeLocked(lru)
		c.evictions++
	}
	return len(c.sessions) < c.slots || c.evictLocked(privileged, size, now)
}

// lruLocked returns the least recently used session (lower id first among
// equals), nil if there is none.
// REQUIRES: c.mu held.
func (c *fetchSessionCache) lruLocked() *fetchSession {
	var lru *fetchSession
	for _, s := range c.sessions {
		if lru == nil || s.lastUsed.Before(lru.lastUsed) || s.lastUsed.Equal(lru.lastUsed) && s.id < lru.id {
			lru = s
		}
	}
	return lru
}

// evictLocked makes room for a new session (privileged: a follower's) of
// size partitions, by Kafka's rules (see the file comment), and reports
// whether it did. Sizes are the cache's (fetchSession.size): it never
// takes a session's mutex.
// REQUIRES: c.mu held.
func (c *fetchSessionCache) evictLocked(privileged bool, size int, now time.Time) bool {
	lru := c.lruLocked()
	if lru == nil {
		return false
	}
	if now.Sub(lru.lastUsed) > c.evictAfter {
		c.removeLocked(lru)
		c.evictions++
		return true
	}
	// evictable key order: (privileged, size, id), false before true.
	less := func(aPriv bool, aSize int, aID int32, b *fetchSession) bool {
		if aPriv != b.privileged {
			return !aPriv
		}
		if aSize != b.size {
			return aSize < b.size
		}
		return aID < b.id
	}
	var victim *fetchSession
	for _, s := range c.sessions {
		old := now.Sub(s.created) > c.evictAfter
		if !old && (!privileged || s.privileged) {
			continue
		}
		if victim == nil || less(s.privileged, s.size, s.id, victim) {
			victim = s
		}
	}
	if victim == nil || less(privileged, size, 0, victim) {
		return false
	}
	c.removeLocked(victim)
	c.evictions++
	return true
}

// stats returns the number of sessions cached, the partitions in them and
// the sessions evicted so far (Kafka's NumIncrementalFetchSessions,
// NumIncrementalFetchPartitionsCached, IncrementalFetchSessionEvictions).
func (c *fetchSessionCache) stats() (sessions, partitions int, evictions int64) {
	if c == nil {
		return 0, 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions), c.parts, c.evictions
}
