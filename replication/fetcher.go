package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/internal/kconn"
	"github.com/sluice/sluice/internal/safe"
	"github.com/sluice/sluice/record"
)

// Follower fetchers
//
// A FetcherManager keeps one fetcher goroutine per leader broker (Kafka's
// ReplicaFetcherThread, one per source broker and fetcher id), each with
// one connection, replicating every follower partition led by that broker.
// A partition goes through two states:
//
//   - truncating: find where this log and the leader's agree and cut the
//     rest (KIP-101, KIP-279). Ask the leader (OffsetForLeaderEpoch, with
//     this replica's id and the current leader epoch as fence) for the end
//     offset of this log's latest epoch. The leader answers the end of
//     that epoch, or of the largest epoch it has below it. If this log has
//     the answered epoch too, truncate to the smaller of both ends of it
//     and stop; if not, truncate to the end of this log's largest epoch
//     below the answer and ask again with what is now the latest epoch.
//     Every such round removes at least one epoch, so it ends. A log
//     without epochs, or an answer UNDEFINED, truncates to the high
//     watermark (Kafka's fallback). Records below the high watermark that
//     the leader also has share their epochs with it, so they are never
//     cut.
//   - fetching: Fetch from this log's end offset, append what comes
//     (AppendAsFollower), follow the leader's high watermark and log
//     start. The leader parks the request until it has something or
//     MaxWait passes.
//
// Errors: FENCED_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH
// and the like back the partition off and retry, after 10 ms doubling up
// to Backoff while the refusals last (retryBackoff; the controller's next
// LeaderAndIsr re-adds it with the new leader and epoch).
// OFFSET_OUT_OF_RANGE below the leader's log start restarts this log at the
// leader's log start; otherwise the partition truncates again.
// OFFSET_MOVED_TO_TIERED_STORAGE (below the leader's local log start, on a
// tiered topic) rebuilds this log from the remote tier (tierstate.go). A failed
// request backs off every partition of that leader and reconnects.

// FetcherOptions configure a FetcherManager. Zero values mean the
// documented default.
type FetcherOptions struct {
	// BrokerID is this broker's id, sent as the replica id.
	BrokerID int32
	// ConnSecurity secures the connections to leaders (TLS and SASL of the
	// inter-broker listener).
	ConnSecurity kconn.Security
	// BrokerEpoch returns this broker's registration epoch, sent with each
	// fetch (nil: -1, none).
	BrokerEpoch func() int64
	// Resolve returns a live broker's address (host:port).
	Resolve func(brokerID int32) (addr string, ok bool)
	// Send, when set, replaces the network: it must send req to broker
	// brokerID and return its response (tests use an in-process leader).
	Send func(ctx context.Context, brokerID int32, req kmsg.Request) (kmsg.Response, error)
	// MaxWait is replica.fetch.wait.max.ms (0: 500ms).
	MaxWait time.Duration
	// MinBytes is replica.fetch.min.bytes (0: 1): the leader holds a
	// fetch until this much is readable or MaxWait passes.
	MinBytes int32
	// MaxBytes is replica.fetch.response.max.bytes (0: 10 MiB).
	MaxBytes int32
	// PartitionMaxBytes is replica.fetch.max.bytes (0: 1 MiB).
	PartitionMaxBytes int32
	// Backoff is replica.fetch.backoff.ms (0: 1s).
	Backoff time.Duration
	// RequestTimeout bounds a request beyond MaxWait (0: 30s).
	RequestTimeout time.Duration
	// ClientID names the connections (0: "sluice-replica-fetcher-<id>").
	ClientID string
	Logger   *slog.Logger // nil: slog.Default()
	// Quota is the follower's replication throttle
	// (follower.replication.throttled.rate; nil: none).
	Quota ReplicaQuota
	// RemoteLog finds the state below a leader's local log start in the
	// remote tier (tierstate.go); nil: a follower answered
	// OFFSET_MOVED_TO_TIERED_STORAGE realigns by epochs and retries.
	RemoteLog RemoteLogAux
}

// ReplicaQuota is a follower's replication throttle, Kafka's ReplicaQuota
// (package quota's Replication behind the topic configs). A fetcher leaves
// a partition out of its fetches while it is Throttled, not caught up with
// the leader's high watermark and the quota is Exceeded (Kafka's
// shouldFollowerThrottle), and Records the bytes fetched for every
// Throttled partition, caught up or not. Called by the fetcher goroutines
// concurrently.
type ReplicaQuota interface {
	Throttled(topic string, partition int32) bool
	Exceeded() bool
	Record(bytes int64)
	// NoteSkipped counts partitions left out of a fetch (metrics).
	NoteSkipped(n int)
}

// Request versions the fetchers send: Fetch v12 is the last that names
// topics (v13+ uses topic ids) and the first flexible one;
// OffsetForLeaderEpoch v4 carries the replica id (v3+) and is flexible.
const (
	// fetchVersion 15 carries the follower's broker epoch (ReplicaState,
	// KIP-903), which the leader checks against the follower's current
	// registration, so nobody else can pose as it; topics go by id (v13+).
	fetchVersion                = 15
	offsetForLeaderEpochVersion = 4
)

// FetcherManager runs the follower fetchers of a broker. Safe for
// concurrent use.
type FetcherManager struct {
	opts   FetcherOptions
	logger *slog.Logger

	mu       sync.Mutex
	fetchers map[int32]*fetcher      // by leader id
	parts    map[*Partition]*fetcher // which fetcher has a partition
	closed   bool
}

// NewFetcherManager returns a manager with no partitions.
func NewFetcherManager(opts FetcherOptions) *FetcherManager {
	if opts.MaxWait <= 0 {
		opts.MaxWait = 500 * time.Millisecond
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 10 << 20
	}
	if opts.MinBytes <= 0 {
		opts.MinBytes = 1
	}
	if opts.PartitionMaxBytes <= 0 {
		opts.PartitionMaxBytes = 1 << 20
	}
	if opts.Backoff <= 0 {
		opts.Backoff = time.Second
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 30 * time.Second
	}
	if opts.ClientID == "" {
		opts.ClientID = fmt.Sprintf("sluice-replica-fetcher-%d", opts.BrokerID)
	}
	m := &FetcherManager{opts: opts, logger: opts.Logger,
		fetchers: map[int32]*fetcher{}, parts: map[*Partition]*fetcher{}}
	if m.logger == nil {
		m.logger = slog.Default()
	}
	return m
}

// Add makes p (already a follower: MakeFollower) replicate from leaderID at
// leaderEpoch, starting with truncation. Adding a partition again (a new
// leader or epoch) restarts it there.
func (m *FetcherManager) Add(p *Partition, leaderID, leaderEpoch int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	if old := m.parts[p]; old != nil && old.leader != leaderID {
		m.removeLocked(p)
	}
	f := m.fetchers[leaderID]
	if f == nil {
		f = newFetcher(m, leaderID)
		m.fetchers[leaderID] = f
	}
	m.parts[p] = f
	f.mu.Lock()
	f.parts[p] = &fetchPart{epoch: leaderEpoch, truncating: true}
	f.mu.Unlock()
	f.poke()
}

// Remove stops replicating p. When it returns, no fetcher touches p again
// (a response being applied to p finishes first), so the broker may then
// make it leader or close it.
func (m *FetcherManager) Remove(p *Partition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removeLocked(p)
}

// REQUIRES: m.mu held.
func (m *FetcherManager) removeLocked(p *Partition) {
	f := m.parts[p]
	if f == nil {
		return
	}
	delete(m.parts, p)
	f.mu.Lock()
	delete(f.parts, p)
	empty := len(f.parts) == 0
	f.mu.Unlock()
	if empty {
		delete(m.fetchers, f.leader)
		f.stop()
	}
}

// Close stops every fetcher and waits for them.
func (m *FetcherManager) Close() {
	m.mu.Lock()
	m.closed = true
	fs := m.fetchers
	m.fetchers, m.parts = map[int32]*fetcher{}, map[*Partition]*fetcher{}
	m.mu.Unlock()
	for _, f := range fs {
		f.stop()
	}
}

// fetchPart is a partition's replication state in its fetcher. A new one
// replaces it on every Add, so a response for an older one is dropped.
type fetchPart struct {
	epoch      int32 // the leader epoch sent as CurrentLeaderEpoch
	truncating bool
	// tiered: the leader answered OFFSET_MOVED_TO_TIERED_STORAGE; the
	// next tierRound rebuilds the log from the remote tier.
	tiered bool
	// leaderLogStart is the log start offset of the leader's answer
	// OFFSET_MOVED_TO_TIERED_STORAGE, which the rebuilt log takes (Kafka's
	// fetchPartitionData.logStartOffset in TierStateMachine.start).
	leaderLogStart int64
	backoffUntil   time.Time
	// refusals counts the partition's backoffs in a row; an answer
	// applied without error resets it (see retryBackoff).
	refusals int
	// inSync: the last answer left this log at the leader's high
	// watermark (Kafka's PartitionFetchState.isReplicaInSync, lag <= 0);
	// false until an answer is applied. throttled: the partition was
	// Throttled when last sent. Owned by the fetcher goroutine.
	inSync, throttled bool
}

// fetcher replicates the partitions led by one broker.
type fetcher struct {
	m      *FetcherManager
	leader int32
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{} // buffered 1: partitions were added

	// mu guards parts and is held while a response is applied, so Remove
	// waits for that and no longer.
	mu    sync.Mutex
	parts map[*Partition]*fetchPart

	conn *kconn.Conn  // owned by the goroutine
	sess fetchSession // owned by the goroutine
	// rbuf is the goroutine's response buffer (kconn.RequestBuffered):
	// a response is applied before the next request, so one buffer, as
	// large as the largest response yet, serves every fetch. It holds at
	// most replica.fetch.response.max.bytes (or one larger batch, KIP-74)
	// and lives as long as the fetcher, one per leader.
	rbuf []byte
	// Maps a round fills and forgets, owned by the goroutine and cleared
	// for the next round rather than made anew (with one leader and a few
	// partitions, a follower otherwise made five maps per fetch):
	// snap is snapshot's answer, topicIdx and names index the request
	// being built, spareSent is the fetch session's previous sent map.
	snap      map[tp]pending
	topicIdx  map[string]int
	names     map[[16]byte]string
	spareSent map[tp]sentPart
}

// fetchSession is a follower's KIP-227 fetch session with its leader (see
// the server's fetch_session.go for the leader's side). With one, a Fetch
// names only the partitions whose fetch position changed or that joined,
// and forgets those that left (backed off, truncating, removed); the
// leader reads all of them and answers only those with news.
type fetchSession struct {
	id    int32 // 0: none; the next Fetch asks for one (epoch 0)
	epoch int32 // of the next incremental Fetch
	// sent is what the leader's session holds, as last sent.
	sent map[tp]sentPart
}

// sentPart is a partition's fetch position as the leader's session has it.
type sentPart struct {
	topicID               [16]byte
	fetchOffset, logStart int64
	leaderEpoch, maxBytes int32
}

// reset drops the session after an error: the next Fetch is a full one
// that closes the old session on the leader (its id with epoch 0) and asks
// for a new one.
func (s *fetchSession) reset() {
	s.epoch, s.sent = 0, nil
}

func newFetcher(m *FetcherManager, leader int32) *fetcher {
	ctx, cancel := context.WithCancel(context.Background())
	f := &fetcher{m: m, leader: leader, ctx: ctx, cancel: cancel,
		done: make(chan struct{}), wake: make(chan struct{}, 1), parts: map[*Partition]*fetchPart{}}
	go f.run()
	return f
}

func (f *fetcher) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fetcher) stop() {
	f.cancel()
	<-f.done
}

func (f *fetcher) run() {
	defer close(f.done)
	defer func() {
		if f.conn != nil {
			f.conn.Close()
		}
	}()
	for f.ctx.Err() == nil {
		var truncated, fetched bool
		err := safe.Call(f.m.logger, "replication: replica fetcher round", func() error {
			truncated = f.truncateRound()
			truncated = f.tierRound() || truncated
			fetched = f.fetchRound()
			return nil
		})
		switch {
		case err != nil: // a bug: back off, then go on fetching
			f.sleep()
		case !truncated && !fetched:
			f.idle()
		}
	}
}

// idle waits for an Add, the end of the earliest backoff, or stop.
func (f *fetcher) idle() {
	wait := f.m.opts.Backoff
	now := time.Now()
	f.mu.Lock()
	for _, st := range f.parts {
		if d := st.backoffUntil.Sub(now); d > 0 && d < wait {
			wait = d
		}
	}
	f.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-f.ctx.Done():
	case <-f.wake:
	case <-t.C:
	}
}

// sleep backs off every partition after a failed request.
func (f *fetcher) sleep() {
	t := time.NewTimer(f.m.opts.Backoff)
	defer t.Stop()
	select {
	case <-f.ctx.Done():
	case <-t.C:
	}
}

// send sends req to the leader, over the injected Send or the connection.
func (f *fetcher) send(req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(f.ctx, f.m.opts.MaxWait+f.m.opts.RequestTimeout)
	defer cancel()
	if f.m.opts.Send != nil {
		return f.m.opts.Send(ctx, f.leader, req)
	}
	if f.conn == nil {
		if f.m.opts.Resolve == nil {
			return nil, fmt.Errorf("replication: no address for broker %d (no Resolve)", f.leader)
		}
		addr, ok := f.m.opts.Resolve(f.leader)
		if !ok {
			return nil, fmt.Errorf("replication: no address for broker %d", f.leader)
		}
		f.conn = kconn.NewSecure(addr, f.m.opts.ClientID, f.m.opts.RequestTimeout, f.m.opts.ConnSecurity)
	}
	resp, err := f.conn.RequestBuffered(ctx, req, &f.rbuf)
	if err != nil {
		// Resolve again next time: the leader may have moved.
		f.conn.Close()
		f.conn = nil
	}
	return resp, err
}

// pending is one partition of a request in flight.
type pending struct {
	p  *Partition
	st *fetchPart
}

type tp struct {
	topic     string
	partition int32
}

// snapshot returns the partitions eligible for a request of the given
// kind, in a map the next call reuses (only the goroutine calls it, and a
// round is done with it before the next begins).
func (f *fetcher) snapshot(truncating bool) map[tp]pending {
	now := time.Now()
	out := f.snap
	if out == nil {
		out = map[tp]pending{}
		f.snap = out
	}
	clear(out)
	f.mu.Lock()
	defer f.mu.Unlock()
	for p, st := range f.parts {
		if st.truncating != truncating || st.tiered || now.Before(st.backoffUntil) {
			continue
		}
		out[tp{p.Topic(), p.Index()}] = pending{p, st}
	}
	return out
}

// roundMaps returns the cleared maps fetchRound fills: the request's topic
// index, the topic names by id, and the map of what it sends, which
// becomes the session's (keptSent in fetchRound) or the spare again.
func (f *fetcher) roundMaps() (topics map[string]int, names map[[16]byte]string, sent map[tp]sentPart) {
	if f.topicIdx == nil {
		f.topicIdx, f.names = map[string]int{}, map[[16]byte]string{}
	}
	sent, f.spareSent = f.spareSent, nil
	if sent == nil {
		sent = map[tp]sentPart{}
	}
	clear(f.topicIdx)
	clear(f.names)
	clear(sent)
	return f.topicIdx, f.names, sent
}

// current reports whether pd is still the partition's state (not removed
// or re-added). REQUIRES: f.mu held.
func (f *fetcher) current(pd pending) bool { return f.parts[pd.p] == pd.st }

// backoff pauses a partition after a refusal or a failure to apply an
// answer, for retryBackoff of its refusals in a row.
func (f *fetcher) backoff(st *fetchPart) {
	st.refusals++
	st.backoffUntil = time.Now().Add(retryBackoff(st.refusals, f.m.opts.Backoff))
}

// minRetryBackoff is a partition's first pause after a refusal.
const minRetryBackoff = 10 * time.Millisecond

// retryBackoff is the pause after a partition's n-th refusal in a row
// (n >= 1): minRetryBackoff, doubling, at most max (Backoff,
// replica.fetch.backoff.ms). Kafka's fetcher pauses a refused partition for
// the whole replica.fetch.backoff.ms (1 s), but the commonest refusal passes
// within milliseconds: a new partition's followers fetch as soon as their LeaderAndIsr
// arrives, often before the leader has applied its own, and are answered
// NOT_LEADER_OR_FOLLOWER. The ISR counts them, so for that second every
// acks=all request waited: scripts/bench-replication.sh measured RF 3
// produce and e2e p99 at ~1,000 ms, e2e p99 20-90 ms without the pause. Eight
// retries in a row reach 1 s, so a refusal that lasts costs the leader
// about that many more requests.
func retryBackoff(n int, max time.Duration) time.Duration {
	d := minRetryBackoff
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// truncateRound runs one OffsetForLeaderEpoch round for the truncating
// partitions. It reports whether it had any.
func (f *fetcher) truncateRound() bool {
	parts := f.snapshot(true)
	if len(parts) == 0 {
		return false
	}
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version = offsetForLeaderEpochVersion
	req.ReplicaID = f.m.opts.BrokerID
	topics := map[string]int{}
	f.mu.Lock()
	for k, pd := range parts {
		if !f.current(pd) {
			delete(parts, k)
			continue
		}
		latest := pd.p.LatestEpoch()
		if latest < 0 {
			// No epochs here: Kafka's fallback, the high watermark.
			f.finishTruncation(pd, pd.p.HighWatermark(), "no local leader epochs")
			delete(parts, k)
			continue
		}
		i, ok := topics[k.topic]
		if !ok {
			i = len(req.Topics)
			topics[k.topic] = i
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = k.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition = k.partition
		rp.CurrentLeaderEpoch = pd.st.epoch
		rp.LeaderEpoch = latest
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	f.mu.Unlock()
	if len(req.Topics) == 0 {
		return true
	}
	kresp, err := f.send(req)
	if err != nil {
		if f.ctx.Err() == nil {
			f.m.logger.Warn("replication: OffsetForLeaderEpoch failed", "leader", f.leader, "err", err)
			f.sleep()
		}
		return true
	}
	resp, ok := kresp.(*kmsg.OffsetForLeaderEpochResponse)
	if !ok {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.backoffUnanswered(parts)
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			k := tp{rt.Topic, rp.Partition}
			pd, ok := parts[k]
			if !ok || !f.current(pd) {
				continue
			}
			delete(parts, k)
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				level := slog.LevelInfo
				if pd.st.refusals > 0 {
					level = slog.LevelDebug // said once per run of refusals
				}
				f.m.logger.Log(f.ctx, level, "replication: OffsetForLeaderEpoch refused; backing off", "topic", rt.Topic, "partition", rp.Partition,
					"leader", f.leader, "epoch", pd.st.epoch, "err", err)
				f.backoff(pd.st)
				continue
			}
			f.truncateStep(pd, rp.LeaderEpoch, rp.EndOffset)
		}
	}
	return true
}

// truncateStep applies one OffsetForLeaderEpoch answer (leaderEpoch,
// endOffset) for pd (see the top of this file). REQUIRES: f.mu held.
func (f *fetcher) truncateStep(pd pending, leaderEpoch int32, endOffset int64) {
	p := pd.p
	leo := p.LogEndOffset()
	if endOffset < 0 {
		f.finishTruncation(pd, p.HighWatermark(), "leader answered UNDEFINED")
		return
	}
	asked := p.LatestEpoch()
	fe, fend := p.localEndOffsetForEpoch(leaderEpoch)
	switch {
	case fend < 0:
		// This log has no epoch at or below the leader's: its history
		// lies above it; the leader's end is the bound.
		f.finishTruncation(pd, min(endOffset, leo), "no local epoch at or below the leader's")
	case fe != leaderEpoch:
		// KIP-279: this log lacks the answered epoch. Cut to the end of
		// its largest epoch below it, then ask again.
		if err := p.TruncateTo(min(fend, leo)); err != nil {
			f.m.logger.Warn("replication: truncation failed", "topic", p.Topic(), "partition", p.Index(), "err", err)
			f.backoff(pd.st)
			return
		}
		if p.LatestEpoch() == asked {
			// No progress (cannot happen with a sane history): stop
			// rather than loop.
			f.finishTruncation(pd, min(fend, leo), "no progress")
		}
	default:
		f.finishTruncation(pd, min(fend, endOffset, leo), "")
	}
}

// finishTruncation truncates to offset and switches pd to fetching.
// REQUIRES: f.mu held.
func (f *fetcher) finishTruncation(pd pending, offset int64, why string) {
	p := pd.p
	if err := p.TruncateTo(offset); err != nil {
		f.m.logger.Warn("replication: truncation failed", "topic", p.Topic(), "partition", p.Index(), "offset", offset, "err", err)
		f.backoff(pd.st)
		return
	}
	if why != "" {
		f.m.logger.Info("replication: truncated by fallback", "topic", p.Topic(), "partition", p.Index(), "offset", p.LogEndOffset(), "why", why)
	}
	pd.st.truncating, pd.st.refusals = false, 0
}

// fetchRound sends one Fetch for the fetching partitions and applies the
// answer. It reports whether it had any partition to fetch.
func (f *fetcher) fetchRound() bool {
	parts := f.snapshot(false)
	if len(parts) == 0 {
		return false
	}
	if f.throttle(parts) {
		return false // every partition held back: idle for a backoff
	}
	o := f.m.opts
	req := kmsg.NewPtrFetchRequest()
	req.Version = fetchVersion
	req.ReplicaID = o.BrokerID
	req.ReplicaState.ID, req.ReplicaState.Epoch = o.BrokerID, -1
	if o.BrokerEpoch != nil {
		req.ReplicaState.Epoch = o.BrokerEpoch()
	}
	req.MaxWaitMillis = int32(o.MaxWait / time.Millisecond)
	req.MinBytes = o.MinBytes
	req.MaxBytes = o.MaxBytes
	sess := &f.sess
	incremental := sess.id != 0 && sess.epoch > 0
	req.SessionID, req.SessionEpoch = sess.id, sess.epoch
	// names: the answer names topics by id.
	topics, names, sent := f.roundMaps()
	keptSent := false
	defer func() {
		if !keptSent {
			f.spareSent = sent
		}
	}()
	for k, pd := range parts {
		sp := sentPart{topicID: pd.p.TopicID(), fetchOffset: pd.p.LogEndOffset(), logStart: pd.p.LogStart(),
			leaderEpoch: pd.st.epoch, maxBytes: o.PartitionMaxBytes}
		sent[k] = sp
		names[sp.topicID] = k.topic
		if old, ok := sess.sent[k]; incremental && ok {
			if old == sp {
				continue // the leader's session has it as it is
			}
			if old.topicID != sp.topicID {
				// The topic was re-created between two rounds: the
				// leader's session holds the old id's partition, which
				// it would answer with an error (news) on every round.
				req.ForgottenTopics = append(req.ForgottenTopics, kmsg.FetchRequestForgottenTopic{
					Topic: k.topic, TopicID: old.topicID, Partitions: []int32{k.partition}})
			}
		}
		i, ok := topics[k.topic]
		if !ok {
			i = len(req.Topics)
			topics[k.topic] = i
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = k.topic, sp.topicID
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = k.partition
		rp.CurrentLeaderEpoch = sp.leaderEpoch
		rp.FetchOffset = sp.fetchOffset
		rp.LogStartOffset = sp.logStart
		rp.PartitionMaxBytes = sp.maxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	if incremental {
		for k, old := range sess.sent {
			if _, ok := sent[k]; !ok {
				req.ForgottenTopics = append(req.ForgottenTopics, kmsg.FetchRequestForgottenTopic{
					Topic: k.topic, TopicID: old.topicID, Partitions: []int32{k.partition}})
			}
		}
	}
	kresp, err := f.send(req)
	if err != nil {
		sess.reset() // the leader may or may not have moved the epoch
		if f.ctx.Err() == nil {
			f.m.logger.Warn("replication: fetch failed", "leader", f.leader, "err", err)
			f.sleep()
		}
		return true
	}
	resp, ok := kresp.(*kmsg.FetchResponse)
	if !ok {
		return true
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		sess.reset()
		switch {
		case errors.Is(err, kerr.FetchSessionIDNotFound), errors.Is(err, kerr.InvalidFetchSessionEpoch),
			errors.Is(err, kerr.FetchSessionTopicIDError):
			// Evicted, or out of step: start a new session now (the
			// next Fetch closes this id, if the leader still has it).
			f.m.logger.Info("replication: fetch session lost", "leader", f.leader, "session", sess.id, "err", err)
		default:
			f.m.logger.Warn("replication: fetch refused", "leader", f.leader, "err", err)
			f.sleep()
		}
		return true
	}
	switch {
	case resp.SessionID == 0: // none made, or the leader closed it
		sess.id = 0
		sess.reset()
	case incremental:
		sess.epoch = nextSessionEpoch(sess.epoch)
		f.spareSent, sess.sent, keptSent = sess.sent, sent, true
	default: // a new session
		f.spareSent = sess.sent
		sess.id, sess.epoch, sess.sent, keptSent = resp.SessionID, 1, sent, true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !incremental {
		// A full answer names every partition; an incremental one only
		// those with news.
		defer f.backoffUnanswered(parts)
	}
	for _, rt := range resp.Topics {
		name := rt.Topic
		if n, ok := names[rt.TopicID]; ok && name == "" {
			name = n
		}
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			k := tp{name, rp.Partition}
			pd, ok := parts[k]
			if !ok || !f.current(pd) {
				continue
			}
			delete(parts, k)
			f.applyFetch(pd, rp)
		}
	}
	return true
}

// throttle applies the follower's replication throttle to the partitions
// of a round: it notes which are Throttled and, while the quota is
// Exceeded, drops from parts those not caught up (the fetch session then
// forgets them until they are sent again). It reports whether it dropped
// them all: Kafka's fetcher then sends nothing and waits
// replica.fetch.backoff.ms.
func (f *fetcher) throttle(parts map[tp]pending) (all bool) {
	q := f.m.opts.Quota
	if q == nil {
		return false
	}
	exceeded := q.Exceeded()
	dropped := 0
	for k, pd := range parts {
		pd.st.throttled = q.Throttled(k.topic, k.partition)
		if pd.st.throttled && exceeded && !pd.st.inSync {
			delete(parts, k)
			dropped++
		}
	}
	q.NoteSkipped(dropped)
	return dropped > 0 && len(parts) == 0
}

// nextSessionEpoch is Kafka's FetchMetadata.nextEpoch for an incremental
// epoch (> 0): one more, and 1 after MaxInt32.
func nextSessionEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// backoffUnanswered backs off the partitions a response left out, so a
// leader that ignores one is not asked again in a tight loop.
// REQUIRES: f.mu held.
func (f *fetcher) backoffUnanswered(parts map[tp]pending) {
	for _, pd := range parts {
		if f.current(pd) {
			f.backoff(pd.st)
		}
	}
}

// applyFetch applies one partition of a Fetch answer. REQUIRES: f.mu held.
func (f *fetcher) applyFetch(pd pending, rp *kmsg.FetchResponseTopicPartition) {
	p := pd.p
	switch err := kerr.ErrorForCode(rp.ErrorCode); {
	case err == nil:
	case errors.Is(err, kerr.OffsetOutOfRange):
		if rp.LogStartOffset > p.LogEndOffset() {
			if err := p.RestartAt(rp.LogStartOffset); err != nil {
				f.m.logger.Warn("replication: cannot restart at the leader's log start", "topic", p.Topic(), "partition", p.Index(), "offset", rp.LogStartOffset, "err", err)
				f.backoff(pd.st)
			}
			return
		}
		// Above the leader's log end: realign by epochs.
		pd.st.truncating = true
		f.backoff(pd.st)
		return
	case errors.Is(err, kerr.OffsetMovedToTieredStorage):
		pd.st.tiered = true // tierRound, before the next fetch
		pd.st.leaderLogStart = rp.LogStartOffset
		return
	default:
		level := slog.LevelInfo
		if pd.st.refusals > 0 {
			level = slog.LevelDebug // said once per run of refusals
		}
		f.m.logger.Log(f.ctx, level, "replication: fetch refused; backing off", "topic", p.Topic(), "partition", p.Index(),
			"leader", f.leader, "epoch", pd.st.epoch, "err", err)
		f.backoff(pd.st)
		return
	}
	data := wholeBatchesFrom(rp.RecordBatches, p.LogEndOffset())
	if len(data) > 0 {
		if err := p.AppendAsFollower(data); err != nil {
			f.m.logger.Warn("replication: follower append failed", "topic", p.Topic(), "partition", p.Index(), "err", err)
			if errors.Is(err, engine.ErrOffsetMismatch) {
				pd.st.truncating = true
			}
			f.backoff(pd.st)
			return
		}
	}
	pd.st.refusals = 0
	if pd.st.throttled && f.m.opts.Quota != nil {
		// Kafka records the records' size of every throttled
		// partition, in sync or not.
		f.m.opts.Quota.Record(int64(len(rp.RecordBatches)))
	}
	pd.st.inSync = rp.HighWatermark-p.LogEndOffset() <= 0
	p.UpdateFollowerHW(rp.HighWatermark)
	p.followLogStart(rp.LogStartOffset)
}

// wholeBatchesFrom returns the whole batches of b (a fetch answer may end
// with a partial one), skipping any that end before offset.
func wholeBatchesFrom(b []byte, offset int64) []byte {
	start, end := 0, 0
	for end < len(b) {
		size, ok := record.PeekSize(b[end:])
		if !ok || size < record.HeaderSize || size > len(b)-end {
			break
		}
		if record.Batch(b[end:]).NextOffset() <= offset && start == end {
			start = end + size
		}
		end += size
	}
	return b[start:end]
}

// followLogStart raises a follower's log start offset to the leader's
// (Kafka's maybeIncrementLogStartOffset with LeaderOffsetIncremented):
// above the follower's local log start, the records below are deleted
// (DeleteRecords or retention on the leader), never past the follower's
// own high watermark; below it, on a tiered partition whose first records
// are remote, only the log start is raised and checkpointed (RaiseLogStart),
// so that this replica answers it once it leads. A leader's log start
// below the follower's is never a reason to cut or restart its log.
func (p *Partition) followLogStart(leaderStart int64) {
	if p.isLeader.Load() {
		return
	}
	if leaderStart >= 0 && p.LogStartUnknown() {
		// Lost with the checkpoint: LogStart answers the local start,
		// above the leader's maybe, which the leader's low watermark
		// counts this replica as having reached. Kafka's follower takes
		// the leader's (its own read as 0); at or above the local start
		// that settles it there.
		if err := p.ResolveLogStart(leaderStart); err != nil {
			p.opts.Logger.Warn("replication: following the leader's log start failed", "topic", p.opts.Topic, "partition", p.index, "offset", leaderStart, "err", err)
		}
	}
	if leaderStart <= p.LogStart() {
		return
	}
	local := p.log.StartOffset()
	if leaderStart <= local {
		if err := p.RaiseLogStart(leaderStart); err != nil {
			p.opts.Logger.Warn("replication: following the leader's log start failed", "topic", p.opts.Topic, "partition", p.index, "offset", leaderStart, "err", err)
		}
		return
	}
	if off := min(leaderStart, p.hw.Load()); off > local {
		if err := p.log.DeleteBefore(off); err != nil {
			p.opts.Logger.Warn("replication: following the leader's log start failed", "topic", p.opts.Topic, "partition", p.index, "offset", off, "err", err)
		}
	}
}
