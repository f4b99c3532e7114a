package replication

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/zerocopy"
)

// Options configure a Partition. Zero values mean the documented default.
type Options struct {
	Topic       string
	Partition   int32
	LeaderEpoch int32
	// LogAppendTime: the topic has message.timestamp.type=LogAppendTime.
	LogAppendTime bool
	// Rules are the topic's limits that Append checks client batches
	// against (record.ValidateAppend): the decompression bound and the
	// timestamp bounds. Now and LogAppendTime are filled in per append.
	// nil: record.DefaultRules(). See SetRules.
	Rules *record.Rules
	// FlushEveryAppend makes the partition call Log.Flush after every
	// coalesced append and before advancing the high watermark, so acks=-1
	// answers only durable data. Leave it false when the log itself was
	// created with LogConfig.FlushMessages=1 (its Append already fsyncs).
	FlushEveryAppend bool
	// ProducerScanBytes is how many bytes are appended at most between
	// producer snapshots (besides one at each segment roll), so that a
	// restart replays at most this much of the log after the latest
	// snapshot; with no usable snapshot the whole log is read
	// (rebuild.go). 0: DefaultProducerScanBytes; < 0: snapshot every
	// DefaultProducerScanBytes, and with no usable snapshot do not scan
	// (producers and open transactions of the log are then unknown).
	ProducerScanBytes int64
	// TopicID is the topic's id: followers fetch by id (Fetch v13+).
	TopicID [16]byte
	// ProducerIDExpiration is producer.id.expiration.ms: idempotent
	// producers idle this long are forgotten (0: never; see producers.go).
	ProducerIDExpiration time.Duration
	Now                  func() time.Time // nil: time.Now
	Logger               *slog.Logger     // nil: slog.Default()

	// BrokerID is this broker's id: the partition's own replica id. A
	// partition without cluster state (NewPartition until MakeLeader or
	// MakeFollower) is leader with replicas and ISR {BrokerID}.
	BrokerID int32
	// MinInsyncReplicas is the topic's min.insync.replicas (0: 1); see
	// SetMinInsyncReplicas.
	MinInsyncReplicas int
	// ReplicaLagTimeMax is replica.lag.time.max.ms (0: 30s): a follower
	// that has not caught up with the leader's log end for this long
	// leaves the ISR at the next MaybeShrinkISR.
	ReplicaLagTimeMax time.Duration
	// AlterISR is called by the leader to change the ISR (shrink or
	// expand), with st.ISR the proposed ISR and st.ZkVersion the version
	// of the partition state the leader knows; it returns the state's new
	// version. The broker writes the state to ZooKeeper guarded by that
	// version. On error the change is not applied and is tried again
	// later (on the next follower fetch or MaybeShrinkISR). At most one
	// call per partition runs at a time, without the partition's locks
	// held. When the state changed under the leader (another writer, the
	// controller, moved its version), AlterISR should return a
	// *StateConflictError carrying the state as it is now: the leader then
	// stops leading if that state names another leader or a newer epoch,
	// or adopts its ISR and version and tries its change again.
	// nil: the change is applied locally only (tests).
	AlterISR func(ctx context.Context, topic string, partition int32, st LeaderAndIsr) (newZkVersion int32, err error)

	// RestoreHighWatermark makes NewPartition start the high watermark at
	// HighWatermark (clamped to the log's range) instead of the log end:
	// in cluster mode a replica's log may hold records past what the ISR
	// had, and consumers must not see them until they are committed again.
	// The broker passes the value it checkpointed (Kafka's
	// replication-offset-checkpoint), or the log start when it has none.
	RestoreHighWatermark bool
	HighWatermark        int64

	// OnISRChange, when set, is called after the leader applied an ISR
	// change (shrink true for a shrink, false for an expansion): the
	// broker's IsrShrinks/IsrExpands metrics. It must not block.
	OnISRChange func(shrink bool)
	// OnFollowerAppend, when set, is called with the bytes of every
	// successful AppendAsFollower (the broker's ReplicationBytesIn). It
	// must not block.
	OnFollowerAppend func(bytes int64)

	// Shared, when set, is the topic-wide part of these Options made by
	// NewShared for another partition of the topic: the partition keeps
	// it rather than its own copy. Its function fields must be the ones
	// these Options name; the others are checked, and a Shared that
	// differs is not used.
	Shared *Shared
}

// Shared is the part of Options that every partition of a topic has in
// common: the fields read after NewPartition other than the partition
// index. A partition keeps a pointer to one, so that the partitions of a
// topic share a copy (~90 bytes each otherwise). Never modified once made.
type Shared struct {
	Topic                string
	TopicID              [16]byte
	BrokerID             int32
	FlushEveryAppend     bool
	ProducerScanBytes    int64
	ProducerIDExpiration time.Duration
	ReplicaLagTimeMax    time.Duration // never <= 0: DefaultReplicaLagTimeMax
	AlterISR             func(ctx context.Context, topic string, partition int32, st LeaderAndIsr) (newZkVersion int32, err error)
	OnISRChange          func(shrink bool)
	OnFollowerAppend     func(bytes int64)
	// Now and Logger are Options.Now and Options.Logger with their
	// defaults (time.Now, slog.Default()). Now is a function field;
	// Logger is compared.
	Now    func() time.Time
	Logger *slog.Logger
}

// NewShared returns the topic-wide part of o, to pass as Options.Shared
// when opening the topic's other partitions.
func (o *Options) NewShared() *Shared {
	return &Shared{
		Topic: o.Topic, TopicID: o.TopicID, BrokerID: o.BrokerID,
		FlushEveryAppend: o.FlushEveryAppend, ProducerScanBytes: o.ProducerScanBytes,
		ProducerIDExpiration: o.ProducerIDExpiration, ReplicaLagTimeMax: o.lagMax(),
		AlterISR: o.AlterISR, OnISRChange: o.OnISRChange, OnFollowerAppend: o.OnFollowerAppend,
		Now: o.now(), Logger: o.logger(),
	}
}

// now is Now with its default.
func (o *Options) now() func() time.Time {
	if o.Now == nil {
		return time.Now
	}
	return o.Now
}

// logger is Logger with its default.
func (o *Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.Default()
	}
	return o.Logger
}

// lagMax is ReplicaLagTimeMax with its default.
func (o *Options) lagMax() time.Duration {
	if o.ReplicaLagTimeMax <= 0 {
		return DefaultReplicaLagTimeMax
	}
	return o.ReplicaLagTimeMax
}

// Matches reports whether sh describes the topic-wide part of o, as far as
// it can be compared: the function fields cannot be, and the caller
// vouches for them.
func (sh *Shared) Matches(o *Options) bool {
	return sh != nil && sh.Topic == o.Topic && sh.TopicID == o.TopicID && sh.BrokerID == o.BrokerID &&
		sh.FlushEveryAppend == o.FlushEveryAppend && sh.ProducerScanBytes == o.ProducerScanBytes &&
		sh.ProducerIDExpiration == o.ProducerIDExpiration && sh.ReplicaLagTimeMax == o.lagMax() &&
		sh.Logger == o.logger()
}

// shared returns o.Shared when it matches o, else a new copy of o's.
func (o *Options) shared() *Shared {
	if o.Shared.Matches(o) {
		return o.Shared
	}
	return o.NewShared()
}

// partitionOpts is what a Partition keeps of its Options: the topic-wide
// part, shared (the partition's index is Partition.index).
type partitionOpts struct {
	*Shared
}

// DefaultReplicaLagTimeMax is Kafka's replica.lag.time.max.ms.
const DefaultReplicaLagTimeMax = 30 * time.Second

// DefaultProducerScanBytes is how many bytes are appended at most between
// producer snapshots when Options.ProducerScanBytes is 0.
const DefaultProducerScanBytes = 32 << 20

// AppendResult describes the outcome of one Append.
type AppendResult struct {
	// BaseOffset is the offset of the first record of this request's
	// batches (the original offset for a duplicate).
	BaseOffset int64
	// LastOffset is the offset of the last record of this request's batches.
	LastOffset int64
	// LogAppendTime is the broker time (ms) written into the batches, or
	// -1 unless the topic uses LogAppendTime.
	LogAppendTime  int64
	LogStartOffset int64
	// Duplicate: the batches were a retry of already-appended ones; nothing
	// was written.
	Duplicate bool
	// Appended: the batches reached the local log. Also set when the
	// append returns an error from the acks=-1 wait that follows it
	// (timeout, ISR shrunk below min.insync.replicas, leadership lost,
	// ctx done): the records are in the log even though the producer is
	// told otherwise, and the broker's MessagesIn counts them, as Kafka
	// counts at the local append.
	Appended bool
	// Waited is how long an acks=-1 append waited for the ISR after the
	// local append (the request's remote time in the broker's metrics).
	Waited time.Duration

	// gen is the partition's generation at the append: an acks=-1
	// wait fails with ErrNotLeader if leadership moved since.
	gen uint64
}

// Partition is one partition replica: the leader, which appends produce
// requests and tracks its followers (replica.go), or a follower, which a
// fetcher feeds (follower.go). Safe for concurrent use.
//
// Lock order: fmu, then rmu, then hwMu; qmu is never held with another.
//
// Size: 408 bytes, in the 416-byte size class (TestPartitionSize); a broker
// holds one per partition, 100,000 of them on the pebble backend. What
// most partitions never use is made on first use (the append queue, the
// transaction tracker, the producer table); what every partition of a
// topic shares is in opts.
type Partition struct {
	log  engine.Log
	opts partitionOpts // opts.Now and opts.Logger are the clock and logger

	leaderEpoch atomic.Int32
	index       int32                        // the partition's number in its topic
	rules       atomic.Pointer[record.Rules] // never nil; never modified once stored
	hw          atomic.Int64
	// lso is the last stable offset (txn.go); it moves with hwMu held.
	// Invariant: lso <= hw.
	lso atomic.Int64
	// wakeGen counts the changes that wake every watcher (watch.go); it
	// is written with hwMu held and read without it by Watch.Prepare and
	// beside hw and lso by fetches that check a partition is unchanged
	// (WakeGen), so it shares their cache line.
	wakeGen atomic.Uint64

	// The flags, side by side so that they take 8 bytes, not 32; each is
	// guarded as the group it belongs to says.
	logAppendTime atomic.Bool
	isLeader      atomic.Bool // see gen
	closed        bool        // hwMu
	lsoFollowsHW  bool        // hwMu; see lsoWatchers
	appending     bool        // qmu; see qmu
	qclosed       bool        // qmu

	// hwMu guards changed, closed, the watcher lists (acks included) and
	// marks; hw moves only with it held.
	hwMu    sync.Mutex
	changed chan struct{} // closed when hw advances; nil until someone asks

	// Parked fetches (watch.go): consumers wait for the high watermark,
	// followers for the log end. marks prices HW moves in bytes.
	hwWatchers, endWatchers watchList
	marks                   byteMarks
	// lsoWatchers are read_committed consumers' Watches; lsoFollowsHW
	// says the LSO equals the HW (no unstable transaction), so HW moves
	// price LSO moves too. txns is what the LSO depends on (txn.go).
	lsoWatchers watchList
	// txns is nil until a transaction event arrives: made by
	// applyTxnEvents, dropped by resetTxnTracking, both by the producer
	// table's owner with hwMu held (so the owner may read it without).
	txns *txnTracker
	// acks are the acks=-1 requests waiting for the HW (ackwait.go),
	// decided with hwMu held when the HW, leadership, ISR or closing
	// changes. isrSizes mirrors len(rs.isr)<<32 | rs.minISR for them
	// (written with rmu held, read with hwMu held).
	acks     ackList
	isrSizes atomic.Int64

	// qmu guards the append queue. Invariant: appending is true while a
	// round runs or is handed over, and the queue is empty when it is false.
	qmu sync.Mutex
	q   *appendQueue // nil until the first append is queued

	// Owned by the goroutine leading the current round (see append.go).
	// nil while empty: most partitions never see an idempotent producer
	// (see producerTable).
	producers *producerState

	appends atomic.Int64 // engine appends made, for tests and stats

	// isLeader (with the flags above) mirrors rs.leader for lock-free
	// checks; gen counts the times leadership was lost (an acks=-1 waiter
	// whose append was made in an older generation fails with
	// ErrNotLeader).
	gen atomic.Uint64

	// rmu guards rs, the replica state (see replica.go).
	rmu sync.Mutex
	rs  replicaState

	// fmu serializes follower operations (AppendAsFollower, TruncateTo,
	// RestartAt) with each other and with MakeLeader.
	fmu sync.Mutex

	// snap tracks the producer snapshots (rebuild.go). REQUIRES: the
	// owner of producers.
	snap snapState
}

// NewPartition takes ownership of log (Close closes it; when NewPartition
// fails, the caller still owns it) and loads the idempotent-producer state
// from the log's latest producer snapshot and the log after it, or from
// the whole log when there is none (see rebuild.go).
// The partition starts as leader at Options.LeaderEpoch with the high
// watermark at the log end.
func NewPartition(log engine.Log, opts Options) (*Partition, error) {
	p := &Partition{log: log, opts: partitionOpts{Shared: opts.shared()}, index: opts.Partition}
	p.leaderEpoch.Store(opts.LeaderEpoch)
	p.initReplicaState(opts.MinInsyncReplicas)
	p.logAppendTime.Store(opts.LogAppendTime)
	if opts.Rules != nil {
		p.SetRules(*opts.Rules)
	} else {
		p.SetRules(record.DefaultRules())
	}
	if err := p.loadProducerState(); err != nil {
		return nil, err
	}
	p.opts.Logger.Debug("replication: partition open", "topic", opts.Topic, "partition", opts.Partition,
		"start", log.StartOffset(), "end", log.EndOffset(), "producers", p.producers.len())
	// Everything in the local log is committed, as in single-node mode,
	// unless the broker restores the high watermark it checkpointed
	// (cluster mode).
	hw := log.EndOffset()
	if opts.RestoreHighWatermark {
		hw = min(max(opts.HighWatermark, log.StartOffset()), hw)
	}
	p.hw.Store(hw)
	p.marks.reset(log.EndOffset(), hw)
	p.resetTxnTracking()
	if p.producers.empty() {
		p.producers = nil // made again by the first append (producerTable)
	}
	return p, nil
}

// waitIdleLocked waits until no append round runs (appending is false).
// REQUIRES: p.qmu held.
func (p *Partition) waitIdleLocked() {
	for p.appending {
		if p.q == nil {
			p.q = new(appendQueue) // an empty round led by withProducers
		}
		if p.q.idle == nil {
			p.q.idle = sync.NewCond(&p.qmu)
		}
		p.q.idle.Wait()
	}
}

// endRoundLocked marks the append round over and wakes waitIdleLocked.
// REQUIRES: p.qmu held, the queue empty.
func (p *Partition) endRoundLocked() {
	p.appending = false
	if p.q != nil && p.q.idle != nil {
		p.q.idle.Broadcast()
	}
}

func (p *Partition) isClosed() bool {
	p.hwMu.Lock()
	defer p.hwMu.Unlock()
	return p.closed
}

// advanceHW raises the high watermark to hw, wakes Changed waiters and
// credits consumers' Watches with the bytes it made readable.
func (p *Partition) advanceHW(hw int64) {
	p.hwMu.Lock()
	if hw > p.hw.Load() {
		p.hw.Store(hw)
		p.closeChangedLocked()
		n, ok := p.marks.hwMoved(hw)
		if ok {
			p.hwWatchers.credit(n)
		} else {
			p.hwWatchers.wake()
		}
		p.updateLSOLocked(ok, n)
		if p.acks.head != nil {
			p.settleAcksLocked()
		}
	}
	p.hwMu.Unlock()
}

// appended records an append of n bytes that ended the log at end and
// credits followers' Watches. Call it before the high watermark can pass
// end, which is priced from its mark, and wakeChanged after the HW moved.
func (p *Partition) appended(end, n int64) {
	p.hwMu.Lock()
	p.marks.push(end, n)
	p.endWatchers.credit(n)
	p.hwMu.Unlock()
}

// wakeChanged closes the Changed channel: the log end moved. After an
// append it comes once the HW moved, so acks=-1 waiters wake once.
func (p *Partition) wakeChanged() {
	p.hwMu.Lock()
	p.closeChangedLocked()
	p.hwMu.Unlock()
}

// lowerHW moves the high watermark down to at most hw (a follower
// truncated below it), restarts the byte marks (the log's tail changed)
// and wakes every waiter. A failed append calls it with the log end.
func (p *Partition) lowerHW(hw int64) {
	p.hwMu.Lock()
	if hw < p.hw.Load() {
		p.hw.Store(hw)
	}
	p.marks.reset(p.log.EndOffset(), p.hw.Load())
	p.updateLSOLocked(false, 0)
	p.notifyLocked()
	p.hwMu.Unlock()
}

// notify wakes Changed waiters and every Watch: the ISR, leadership or
// min.insync.replicas changed.
func (p *Partition) notify() {
	p.hwMu.Lock()
	p.notifyLocked()
	p.hwMu.Unlock()
}

// REQUIRES: p.hwMu held.
func (p *Partition) notifyLocked() {
	p.closeChangedLocked()
	p.settleAcksLocked()
	p.wakeGen.Add(1)
	p.hwWatchers.wake()
	p.endWatchers.wake()
	p.lsoWatchers.wake()
}

// REQUIRES: p.hwMu held.
func (p *Partition) closeChangedLocked() {
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
}

// Read returns batches from offset, at most maxBytes (at least one whole
// batch, KIP-74), only below the high watermark. The slice must be Released.
func (p *Partition) Read(offset int64, maxBytes int) (zerocopy.Slice, error) {
	return p.log.Read(offset, maxBytes, p.hw.Load())
}

// ReadReplica is a follower's read: bounded by the log end, not the HW.
func (p *Partition) ReadReplica(offset int64, maxBytes int) (zerocopy.Slice, error) {
	return p.log.Read(offset, maxBytes, -1)
}

// HighWatermark returns the offset below which records are committed.
func (p *Partition) HighWatermark() int64 { return p.hw.Load() }

// LogStartOffset returns the log's first local offset (Kafka's
// localLogStartOffset; see LogStart).
func (p *Partition) LogStartOffset() int64 { return p.log.StartOffset() }

// logStarter is a log that keeps a log start offset below its first local
// offset (segment.Log): Kafka's logStartOffset of a tiered partition whose
// first records are remote, persisted with the log
// (log-start-offset-checkpoint).
type logStarter interface {
	LogStartOffset() int64
	RaiseLogStartOffset(offset int64) error
	DeleteLocalBefore(offset int64) error
	TruncateFullyAndStartAtWithLogStart(offset, logStart int64) error
	LogStartUnknown() bool
	ResolveLogStartOffset(offset int64) error
}

// LogStart returns the log start offset (Kafka's logStartOffset):
// LogStartOffset, or below it on a tiered partition whose first records
// are remote, as DeleteLocalBefore, RaiseLogStart and a follower's fetches
// left it. A follower's fetch answer carries it. Partitions not tiered,
// and backends without a log start of their own, answer LogStartOffset.
func (p *Partition) LogStart() int64 {
	if ls, ok := p.log.(logStarter); ok {
		return ls.LogStartOffset()
	}
	return p.log.StartOffset()
}

// RaiseLogStart raises the log start offset (LogStart) to offset when
// that is above it and below the local log start (records deleted by
// DeleteRecords or remote retention while the remote tier still holds
// them), and makes it durable before returning. At or above the local
// start, DeleteRecordsBefore moves it. A backend without a log start of
// its own ignores it.
func (p *Partition) RaiseLogStart(offset int64) error {
	if ls, ok := p.log.(logStarter); ok {
		return ls.RaiseLogStartOffset(offset)
	}
	return nil
}

// ResolveLogStart settles a log start offset the log lost (loaded
// without a checkpointed one: segment.Log.LogStartUnknown) at offset, the
// first record the remote tier holds, below the local log start, and
// makes it durable; a known log start is left as it is. Until then
// LogStart answers the local log start, and only the remote log manager,
// which knows what is remote, may tell the two apart (LogStartUnknown).
func (p *Partition) ResolveLogStart(offset int64) error {
	if ls, ok := p.log.(logStarter); ok {
		return ls.ResolveLogStartOffset(offset)
	}
	return nil
}

// LogStartUnknown reports whether the log lost its log start offset (see
// ResolveLogStart).
func (p *Partition) LogStartUnknown() bool {
	ls, ok := p.log.(logStarter)
	return ok && ls.LogStartUnknown()
}

// DeleteLocalBefore deletes the local records below offset but keeps the
// log start offset where it is (Kafka's maybeIncrementLocalLogStartOffset:
// a tiered partition's local retention of what is remote). A backend
// without a log start of its own deletes them as DeleteBefore.
func (p *Partition) DeleteLocalBefore(offset int64) error {
	if ls, ok := p.log.(logStarter); ok {
		return ls.DeleteLocalBefore(offset)
	}
	return p.log.DeleteBefore(offset)
}

// LogEndOffset returns the offset the next record will get.
func (p *Partition) LogEndOffset() int64 { return p.log.EndOffset() }

// LeaderEpoch returns the partition's current leader epoch.
func (p *Partition) LeaderEpoch() int32 { return p.leaderEpoch.Load() }

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Changed returns a channel closed the next time the high watermark or the
// log end offset moves, the ISR or leadership changes, or the partition
// closes. Waiters that look at the partition after each change use it;
// acks=-1 appends do not (their outcome is decided by the partition as
// things change: ackwait.go). Fetches park on
// Watches instead (watch.go): one wake-up however many partitions they
// read, and only once their min bytes are met.
func (p *Partition) Changed() <-chan struct{} {
	p.hwMu.Lock()
	defer p.hwMu.Unlock()
	if p.closed {
		return closedChan
	}
	if p.changed == nil {
		p.changed = make(chan struct{})
	}
	return p.changed
}

// DeleteRecordsBefore advances the log start offset (offset -1: HW).
func (p *Partition) DeleteRecordsBefore(offset int64) (int64, error) {
	hw := p.hw.Load()
	if offset < 0 {
		offset = hw
	}
	if offset > hw {
		return -1, fmt.Errorf("replication: delete before %d above high watermark %d: %w", offset, hw, engine.ErrOffsetOutOfRange)
	}
	if err := p.log.DeleteBefore(offset); err != nil {
		return -1, err
	}
	return p.log.StartOffset(), nil
}

// OffsetForTimestamp answers ListOffsets from below the high watermark.
func (p *Partition) OffsetForTimestamp(ts int64) (int64, int64, bool, error) {
	off, t, ok, err := p.log.OffsetForTimestamp(ts)
	if err != nil || !ok || off >= p.hw.Load() {
		return -1, -1, false, err
	}
	return off, t, true, nil
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch (see
// engine.EndOffsetForEpoch): the largest epoch <= epoch this replica knows
// and the offset where the epoch after it begins. A leader counts its
// current epoch as begun at the log end it had when it became leader even
// before a batch of that epoch is written, as Kafka's leader assigns the
// epoch in its cache when it is elected.
func (p *Partition) EndOffsetForEpoch(epoch int32) (int32, int64) {
	p.rmu.Lock()
	entries := p.log.LeaderEpochs()
	if p.rs.leader {
		le := p.leaderEpoch.Load()
		if n := len(entries); n == 0 || entries[n-1].Epoch < le {
			entries = append(entries, engine.EpochEntry{Epoch: le, StartOffset: p.rs.epochStart})
		}
	}
	end := p.log.EndOffset()
	p.rmu.Unlock()
	return engine.EndOffsetForEpoch(entries, epoch, end)
}

// Topic returns the partition's topic name.
func (p *Partition) Topic() string { return p.opts.Topic }

// TopicID returns the partition's topic id (zero when unknown).
func (p *Partition) TopicID() [16]byte { return p.opts.TopicID }

// Index returns the partition's number within its topic.
func (p *Partition) Index() int32 { return p.index }

// SetLogAppendTime switches message.timestamp.type for later appends.
func (p *Partition) SetLogAppendTime(on bool) { p.logAppendTime.Store(on) }

// SetRules replaces the validation limits of later appends (see
// Options.Rules).
func (p *Partition) SetRules(r record.Rules) { p.rules.Store(internRules(r)) }

// lastRules is the Rules most recently stored by a partition. Partitions
// are created a topic at a time with the same rules, so a one-entry cache
// lets them share one copy instead of holding 48 bytes each. Rules are
// never modified once stored, so sharing is safe.
var lastRules atomic.Pointer[record.Rules]

// internRules returns a pointer to a Rules equal to r, shared with other
// partitions when it equals the last one stored. Safe for concurrent use.
func internRules(r record.Rules) *record.Rules {
	if last := lastRules.Load(); last != nil && *last == r {
		return last // no allocation: r does not escape on this path
	}
	nr := new(record.Rules)
	*nr = r
	lastRules.Store(nr)
	return nr
}

// Log returns the underlying log (reads, retention, config changes).
func (p *Partition) Log() engine.Log { return p.log }

// EngineAppends returns how many engine appends the partition has made
// (each carries one or more coalesced requests).
func (p *Partition) EngineAppends() int64 { return p.appends.Load() }

// Close stops appends, waits for the round in progress, fails queued
// requests and acks=-1 waiters with ErrClosed, and closes the log. Calling
// it again returns nil.
func (p *Partition) Close() error {
	p.qmu.Lock()
	p.qclosed = true
	p.waitIdleLocked()
	p.qmu.Unlock()

	p.hwMu.Lock()
	if p.closed {
		p.hwMu.Unlock()
		return nil
	}
	p.closed = true
	p.notifyLocked()
	p.hwMu.Unlock()
	// A clean shutdown leaves a snapshot at the log end, so the next
	// start replays nothing (Kafka's takeSnapshot in UnifiedLog.close).
	p.fmu.Lock()
	p.maybeSnapshot(true)
	p.fmu.Unlock()
	return p.log.Close()
}
