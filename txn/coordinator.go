// Package txn is the transaction coordinator (KIP-98): Kafka's
// TransactionCoordinator and TransactionStateManager over the internal,
// replicated __transaction_state topic, built on coordlog like package
// offsets is for __consumer_offsets.
//
//   - The coordinator of a transactional id is the leader of partition
//     coordlog.PartitionFor(id, n) of __transaction_state. The state of every id
//     led here is in memory (a Value per id, plus the pending transition
//     of a request in flight); each change is appended with acks=all and
//     applied only once committed (write), so a new leader that replays
//     the partition (load) knows exactly what the clients were told.
//   - A transition starts under mu by setting the id's pending transit
//     (no other request may change the id meanwhile: they answer
//     CONCURRENT_TRANSACTIONS), appends it without mu, and applies it
//     under mu if the partition is still led by the same load (shard).
//   - Ending a transaction writes PrepareCommit or PrepareAbort, answers
//     the client, and then (complete, one goroutine per transaction)
//     writes the markers to every partition of the transaction through
//     the MarkerWriter, retried until written, and writes CompleteCommit
//     or CompleteAbort. A coordinator that loads a partition resumes every
//     transaction it finds in a Prepare state.
//   - Fencing (InitProducerId of a transactional id whose transaction is
//     ongoing) and timeouts (AbortTimedOut) abort the ongoing transaction
//     with the producer epoch bumped, so the old producer is fenced in the
//     coordinator and, through the markers, in every partition.
//   - Idle transactional ids expire after transactional.id.expiration.ms
//     (ExpireTransactionalIDs): a tombstone is written and the id is
//     forgotten.
//
// The package knows nothing of the server: it is handed the local replicas
// of __transaction_state, a producer id allocator and a MarkerWriter
// (Options). Safe for concurrent use.
package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sluice/sluice/coordlog"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replication"
)

// Topic is Kafka's internal transaction state topic.
const Topic = "__transaction_state"

// TopicConfigs returns the topic configs __transaction_state is created
// with, Kafka's (TransactionStateManager.transactionTopicConfigs):
// compacted, uncompressed, no unclean leader election,
// min.insync.replicas = transaction.state.log.min.isr, and segment.bytes =
// transaction.state.log.segment.bytes. The caller owns the map.
func TopicConfigs(segmentBytes int32, minISR int) map[string]string {
	return map[string]string{
		"cleanup.policy":                 "compact",
		"compression.type":               "uncompressed",
		"unclean.leader.election.enable": "false",
		"min.insync.replicas":            strconv.Itoa(minISR),
		"segment.bytes":                  strconv.Itoa(int(segmentBytes)),
	}
}

// Defaults of Options.
const (
	DefaultMaxTimeout         = 15 * time.Minute   // transaction.max.timeout.ms
	DefaultIDExpiration       = 7 * 24 * time.Hour // transactional.id.expiration.ms
	DefaultAbortInterval      = 10 * time.Second   // transaction.abort.timed.out.transaction.cleanup.interval.ms
	DefaultRemoveInterval     = time.Hour          // transaction.remove.expired.transaction.cleanup.interval.ms
	DefaultAppendTimeout      = 5 * time.Second
	DefaultMarkerRetryBackoff = 100 * time.Millisecond
	maxMarkerRetryBackoff     = 2 * time.Second
)

// Options configures New. The functions are called from request handlers
// and background goroutines: they must be safe for concurrent use.
type Options struct {
	// NumPartitions returns the partition count of the local
	// __transaction_state topic, 0 when this broker has no replica of it.
	// Called on every request: it must be cheap. Required.
	NumPartitions func() int32
	// Partition returns the local replica of partition i, nil when this
	// broker has none. Required.
	Partition func(i int32) *replication.Partition
	// Markers writes transaction markers to the partitions' leaders.
	// Required.
	Markers MarkerWriter
	// AllocateProducerID returns a producer id never handed out before.
	// Required.
	AllocateProducerID func() (int64, error)
	// MaxTimeout is transaction.max.timeout.ms. 0: DefaultMaxTimeout.
	MaxTimeout time.Duration
	// IDExpiration is transactional.id.expiration.ms. 0:
	// DefaultIDExpiration.
	IDExpiration time.Duration
	// AbortInterval and RemoveInterval are how often AbortTimedOut and
	// ExpireTransactionalIDs run in the background. 0: the defaults;
	// negative: never (tests call them).
	AbortInterval, RemoveInterval time.Duration
	// AppendTimeout bounds one state write. 0: DefaultAppendTimeout.
	AppendTimeout time.Duration
	// MarkerRetryBackoff is the first pause before markers are sent again
	// (doubling up to 2 s). 0: DefaultMarkerRetryBackoff.
	MarkerRetryBackoff time.Duration
	// Now is the clock of timestamps, timeouts and expiration. nil:
	// time.Now.
	Now func() time.Time
	// Logger: nil means slog.Default().
	Logger *slog.Logger
	// OnComplete, when set, is called each time a transaction's
	// CompleteCommit (commit true) or CompleteAbort state is written: the
	// broker's transaction metrics. It must not block.
	OnComplete func(commit bool)
}

// ProducerIDEpoch is a producer id and epoch.
type ProducerIDEpoch struct {
	ID    int64
	Epoch int16
}

// Coordinator is the transaction coordinator of the __transaction_state
// partitions this broker leads. Create it with New, stop it with Close.
type Coordinator struct {
	opts  Options
	parts *coordlog.Partitions
	stop  chan struct{}
	wg    sync.WaitGroup // background loops and completions

	mu sync.Mutex
	// shards holds the state of each partition whose load installed it;
	// removed by unload. A shard replaced or removed is cancelled.
	shards map[int32]*shard
	closed bool
}

// shard is the state of one loaded partition, for one leadership.
type shard struct {
	index int32
	// epoch is the partition's leader epoch when it was loaded: the
	// coordinator epoch the markers carry.
	epoch int32
	// txns: every transactional id of the partition. REQUIRES: c.mu held.
	txns map[string]*txnMeta
	// ctx is cancelled when the leadership ends: completions stop.
	ctx    context.Context
	cancel context.CancelFunc
}

// txnMeta is one transactional id. Fields REQUIRE c.mu held.
type txnMeta struct {
	id  string
	cur Value // the committed state
	// lastProducerID and lastEpoch are the producer id and epoch before
	// the last InitProducerId (KIP-360: a retried InitProducerId is
	// answered with the same epoch). In memory only, as in Kafka's
	// version 0 records: -1 after a load.
	lastProducerID int64
	lastEpoch      int16
	// pending is the transition being written, nil when none.
	pending *transit
}

// transit is a transition of a txnMeta being written.
type transit struct {
	v              Value
	lastProducerID int64
	lastEpoch      int16
}

// transit returns a transit equal to m's current state.
func (m *txnMeta) transit() *transit {
	v := m.cur
	v.Partitions = slices.Clone(v.Partitions)
	return &transit{v: v, lastProducerID: m.lastProducerID, lastEpoch: m.lastEpoch}
}

// New returns a Coordinator that leads no partition yet, and starts its
// timeout and expiration loops.
func New(opts Options) *Coordinator {
	if opts.MaxTimeout <= 0 {
		opts.MaxTimeout = DefaultMaxTimeout
	}
	if opts.IDExpiration <= 0 {
		opts.IDExpiration = DefaultIDExpiration
	}
	if opts.AbortInterval == 0 {
		opts.AbortInterval = DefaultAbortInterval
	}
	if opts.RemoveInterval == 0 {
		opts.RemoveInterval = DefaultRemoveInterval
	}
	if opts.AppendTimeout <= 0 {
		opts.AppendTimeout = DefaultAppendTimeout
	}
	if opts.MarkerRetryBackoff <= 0 {
		opts.MarkerRetryBackoff = DefaultMarkerRetryBackoff
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	c := &Coordinator{opts: opts, stop: make(chan struct{}), shards: map[int32]*shard{}}
	c.parts = coordlog.New(coordlog.Options{Topic: Topic, Load: c.load, Unload: c.unload, Logger: opts.Logger})
	if opts.AbortInterval > 0 {
		c.wg.Add(1)
		go c.every(opts.AbortInterval, c.AbortTimedOut)
	}
	if opts.RemoveInterval > 0 {
		c.wg.Add(1)
		go c.every(opts.RemoveInterval, c.ExpireTransactionalIDs)
	}
	return c
}

// every calls fn every interval until Close.
func (c *Coordinator) every(interval time.Duration, fn func()) {
	defer c.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			fn()
		}
	}
}

// OnRole is called after LeaderAndIsr applied a state to partition i of
// __transaction_state (and, on a single node, when the topic is opened):
// leading starts a load, following unloads at once.
func (c *Coordinator) OnRole(i int32, leader bool) { c.parts.OnRole(i, leader) }

// OnStop is called when the replica of partition i is stopped, before it
// is closed.
func (c *Coordinator) OnStop(i int32) { c.parts.OnRole(i, false) }

// Owns reports whether this broker leads the partition of id (owned) and,
// if so, whether it is still loading it.
func (c *Coordinator) Owns(id string) (owned, loading bool) {
	n := c.opts.NumPartitions()
	if n == 0 {
		return false, false
	}
	return c.parts.State(coordlog.PartitionFor(id, n))
}

// Close stops the loops, the loads and the completions in flight (a
// transaction left in a Prepare state is completed by the next load) and
// waits for them. Call it before closing the partitions. Idempotent.
func (c *Coordinator) Close() {
	c.parts.Close()
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.stop)
		for _, sh := range c.shards {
			sh.cancel()
		}
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// shardLocked returns the loaded shard of id. Errors: ErrNotCoordinator,
// ErrLoadInProgress. REQUIRES: c.mu held.
func (c *Coordinator) shardLocked(id string) (*shard, error) {
	n := c.opts.NumPartitions()
	if n == 0 {
		return nil, fmt.Errorf("%w: no local %s", ErrNotCoordinator, Topic)
	}
	i := coordlog.PartitionFor(id, n)
	owned, loading := c.parts.State(i)
	sh := c.shards[i]
	switch {
	case !owned:
		return nil, fmt.Errorf("%w: not the leader of %s-%d", ErrNotCoordinator, Topic, i)
	case loading || sh == nil:
		return nil, fmt.Errorf("%w: %s-%d", ErrLoadInProgress, Topic, i)
	}
	return sh, nil
}

// checkID refuses an empty or overlong transactional id.
func checkID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty transactional id", ErrInvalidRequest)
	}
	if len(id) > math.MaxInt16 {
		return fmt.Errorf("%w: %d bytes", ErrTooLong, len(id))
	}
	return nil
}

func (c *Coordinator) nowMs() int64 { return c.opts.Now().UnixMilli() }

// write appends t, m's pending transit, to sh's partition and applies it
// when committed while sh still leads; a Prepare state then starts the
// transaction's completion. m.pending is cleared either way. A Dead
// transit writes a tombstone and forgets m. Errors: ErrNotCoordinator (the
// partition is led elsewhere, or by a later load), ErrCoordinatorNotAvailable
// wrapping what else failed. REQUIRES: c.mu not held; m.pending == t.
func (c *Coordinator) write(ctx context.Context, sh *shard, m *txnMeta, t *transit) error {
	rec := record.BuildRecord{Key: appendKey(nil, m.id), Timestamp: c.nowMs()}
	if t.v.State != Dead {
		rec.Value = appendValue(nil, t.v)
	}
	var err error
	if p := c.opts.Partition(sh.index); p == nil {
		err = fmt.Errorf("%w: no local replica of %s-%d", ErrNotCoordinator, Topic, sh.index)
	} else {
		err = coordlog.Append(ctx, p, []record.BuildRecord{rec}, c.opts.AppendTimeout, ErrNotCoordinator)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.pending == t {
		m.pending = nil
	}
	if err == nil && c.shards[sh.index] != sh {
		err = fmt.Errorf("%w: %s-%d changed leadership during the write", ErrNotCoordinator, Topic, sh.index)
	}
	if err != nil {
		if !errors.Is(err, ErrNotCoordinator) {
			err = fmt.Errorf("%w: %v", ErrCoordinatorNotAvailable, err)
		}
		return err
	}
	m.cur, m.lastProducerID, m.lastEpoch = t.v, t.lastProducerID, t.lastEpoch
	switch t.v.State {
	case Dead:
		delete(sh.txns, m.id)
	case PrepareCommit, PrepareAbort:
		c.startCompleteLocked(sh, m)
	}
	return nil
}

// isEpochExhausted is Kafka's TransactionMetadata.isEpochExhausted: an
// epoch this close to the int16 limit cannot be bumped twice more (once to
// fence, once for the next producer), so the producer id is rotated.
func isEpochExhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

// InitProducerID serves InitProducerId for transactional id (Kafka's
// TransactionCoordinator.handleInitProducerId): a new id starts at epoch 0;
// a known id in a complete state gets its epoch bumped (a new producer id
// when the epoch is exhausted); an ongoing transaction is aborted with the
// epoch bumped, fencing its producer, and the caller is told
// ErrConcurrentTransactions, so that the retry bumps the epoch once more.
// expected (nil: none) is the producer id and epoch of a v3+ request
// (KIP-360): a producer re-initializing after an error keeps its id.
//
// Errors: ErrInvalidRequest, ErrTooLong, ErrInvalidTimeout,
// ErrNotCoordinator, ErrLoadInProgress, ErrConcurrentTransactions,
// ErrProducerFenced, ErrCoordinatorNotAvailable.
func (c *Coordinator) InitProducerID(ctx context.Context, id string, timeoutMs int32, expected *ProducerIDEpoch) (ProducerIDEpoch, error) {
	none := ProducerIDEpoch{ID: -1, Epoch: -1}
	if err := checkID(id); err != nil {
		return none, err
	}
	if timeoutMs <= 0 || time.Duration(timeoutMs)*time.Millisecond > c.opts.MaxTimeout {
		return none, fmt.Errorf("%w: %d ms (transaction.max.timeout.ms is %d)", ErrInvalidTimeout, timeoutMs, c.opts.MaxTimeout.Milliseconds())
	}
	c.mu.Lock()
	sh, err := c.shardLocked(id)
	if err != nil {
		c.mu.Unlock()
		return none, err
	}
	m := sh.txns[id]
	if m == nil {
		pid, err := c.opts.AllocateProducerID()
		if err != nil {
			c.mu.Unlock()
			return none, fmt.Errorf("%w: %v", ErrCoordinatorNotAvailable, err)
		}
		m = &txnMeta{id: id, lastProducerID: -1, lastEpoch: -1, cur: Value{
			ProducerID: pid, ProducerEpoch: -1, TimeoutMs: timeoutMs, State: Empty, LastUpdateMs: c.nowMs(), StartMs: -1,
		}}
		sh.txns[id] = m
	}
	t, fence, err := c.prepareInitLocked(m, timeoutMs, expected)
	if err != nil {
		c.mu.Unlock()
		return none, err
	}
	m.pending = t
	c.mu.Unlock()
	if err := c.write(ctx, sh, m, t); err != nil {
		return none, err
	}
	if fence {
		return none, fmt.Errorf("%w: aborting the ongoing transaction of %q to fence its producer", ErrConcurrentTransactions, id)
	}
	return ProducerIDEpoch{ID: t.v.ProducerID, Epoch: t.v.ProducerEpoch}, nil
}

// prepareInitLocked returns the transition InitProducerId makes (Kafka's
// prepareInitProducerIdTransit): fence says it is the abort of an ongoing
// transaction with the epoch bumped (Kafka's PrepareEpochFence), after
// which the client must retry. REQUIRES: c.mu held.
func (c *Coordinator) prepareInitLocked(m *txnMeta, timeoutMs int32, expected *ProducerIDEpoch) (t *transit, fence bool, err error) {
	if m.pending != nil {
		return nil, false, fmt.Errorf("%w: %q is changing state", ErrConcurrentTransactions, m.id)
	}
	cur := m.cur
	// A producer naming its id and epoch is fenced unless the id was just
	// created (epoch -1), it names the current producer id, or it names
	// the previous one with an exhausted epoch (a retry after a rotation).
	if expected != nil && cur.ProducerEpoch != -1 && expected.ID != cur.ProducerID &&
		(expected.ID != m.lastProducerID || !isEpochExhausted(expected.Epoch)) {
		return nil, false, fmt.Errorf("%w: producer id %d is not %q's current %d", ErrProducerFenced, expected.ID, m.id, cur.ProducerID)
	}
	switch cur.State {
	case PrepareCommit, PrepareAbort:
		return nil, false, fmt.Errorf("%w: %q is in %s", ErrConcurrentTransactions, m.id, cur.State)
	case Ongoing:
		if cur.ProducerEpoch == math.MaxInt16 {
			t, err := c.prepareEndLocked(m, cur.ProducerID, cur.ProducerEpoch, false, false, false)
			return t, true, err
		}
		t, err := c.prepareEndLocked(m, cur.ProducerID, cur.ProducerEpoch+1, false, false, true)
		return t, true, err
	case Empty, CompleteCommit, CompleteAbort:
	default:
		return nil, false, fmt.Errorf("%w: %q is in %s", ErrConcurrentTransactions, m.id, cur.State)
	}
	t = m.transit()
	t.v.State, t.v.Partitions, t.v.StartMs, t.v.LastUpdateMs, t.v.TimeoutMs = Empty, nil, -1, c.nowMs(), timeoutMs
	if isEpochExhausted(cur.ProducerEpoch) && (expected == nil || expected.Epoch == cur.ProducerEpoch) {
		pid, err := c.opts.AllocateProducerID()
		if err != nil {
			return nil, false, fmt.Errorf("%w: %v", ErrCoordinatorNotAvailable, err)
		}
		t.lastProducerID, t.lastEpoch = cur.ProducerID, -1
		if expected != nil {
			t.lastEpoch = cur.ProducerEpoch
		}
		t.v.ProducerID, t.v.ProducerEpoch = pid, 0
		return t, false, nil
	}
	bumped := cur.ProducerEpoch + 1
	switch {
	case expected == nil:
		t.v.ProducerEpoch, t.lastEpoch = bumped, -1
	case cur.ProducerEpoch == -1 || expected.Epoch == cur.ProducerEpoch:
		// The producer continues after an error, and no other producer
		// has been initialized since.
		t.v.ProducerEpoch, t.lastEpoch = bumped, cur.ProducerEpoch
	case expected.Epoch == m.lastEpoch:
		// A retry of an InitProducerId that succeeded: the same epoch.
		t.v.ProducerEpoch, t.lastEpoch = cur.ProducerEpoch, m.lastEpoch
	default:
		return nil, false, fmt.Errorf("%w: epoch %d of %q is not the current %d", ErrProducerFenced, expected.Epoch, m.id, cur.ProducerEpoch)
	}
	return t, false, nil
}

// AddPartitions serves AddPartitionsToTxn (v0-v3) and AddOffsetsToTxn
// (with the group's __consumer_offsets partition): tps join the producer's
// transaction, which starts (Ongoing) if none is. Adding partitions the
// transaction has is a no-op.
//
// Errors: ErrInvalidRequest, ErrTooLong, ErrNotCoordinator,
// ErrLoadInProgress, ErrInvalidProducerIDMapping, ErrProducerFenced,
// ErrConcurrentTransactions, ErrCoordinatorNotAvailable.
func (c *Coordinator) AddPartitions(ctx context.Context, id string, pid int64, epoch int16, tps []TopicPartition) error {
	if err := checkID(id); err != nil {
		return err
	}
	c.mu.Lock()
	sh, err := c.shardLocked(id)
	if err != nil {
		c.mu.Unlock()
		return err
	}
	m := sh.txns[id]
	var t *transit
	switch {
	case m == nil:
		err = fmt.Errorf("%w: unknown transactional id %q", ErrInvalidProducerIDMapping, id)
	case m.cur.ProducerID != pid:
		err = fmt.Errorf("%w: %q has producer id %d, not %d", ErrInvalidProducerIDMapping, id, m.cur.ProducerID, pid)
	case m.cur.ProducerEpoch != epoch:
		err = fmt.Errorf("%w: epoch %d of %q is not the current %d", ErrProducerFenced, epoch, id, m.cur.ProducerEpoch)
	case m.pending != nil:
		err = fmt.Errorf("%w: %q is changing state", ErrConcurrentTransactions, id)
	case m.cur.State == PrepareCommit || m.cur.State == PrepareAbort:
		err = fmt.Errorf("%w: %q is in %s", ErrConcurrentTransactions, id, m.cur.State)
	case m.cur.State == Dead || m.cur.State == PrepareEpochFence:
		err = fmt.Errorf("%w: %q is in %s", ErrConcurrentTransactions, id, m.cur.State)
	case m.cur.State == Ongoing && containsAll(m.cur.Partitions, tps):
	default:
		t = m.transit()
		now := c.nowMs()
		if m.cur.State != Ongoing {
			t.v.StartMs = now
		}
		t.v.State, t.v.LastUpdateMs = Ongoing, now
		t.v.Partitions = sortPartitions(append(t.v.Partitions, tps...))
		m.pending = t
	}
	c.mu.Unlock()
	if err != nil || t == nil {
		return err
	}
	return c.write(ctx, sh, m, t)
}

// containsAll reports whether sorted set has every element of tps.
func containsAll(set, tps []TopicPartition) bool {
	for _, tp := range tps {
		if _, ok := slices.BinarySearchFunc(set, tp, compareTP); !ok {
			return false
		}
	}
	return true
}

// EndTxn serves EndTxn (v0-v4): the producer's ongoing transaction is
// committed or aborted. It returns once PrepareCommit or PrepareAbort is
// written; the markers and the Complete state follow in the background.
// A retry of an end that completed is answered with success.
//
// Errors: ErrInvalidRequest, ErrTooLong, ErrNotCoordinator,
// ErrLoadInProgress, ErrInvalidProducerIDMapping, ErrProducerFenced,
// ErrConcurrentTransactions (a retry while the markers are being written),
// ErrInvalidTxnState, ErrCoordinatorNotAvailable.
func (c *Coordinator) EndTxn(ctx context.Context, id string, pid int64, epoch int16, commit bool) error {
	if err := checkID(id); err != nil {
		return err
	}
	c.mu.Lock()
	sh, err := c.shardLocked(id)
	if err != nil {
		c.mu.Unlock()
		return err
	}
	m := sh.txns[id]
	if m == nil {
		c.mu.Unlock()
		return fmt.Errorf("%w: unknown transactional id %q", ErrInvalidProducerIDMapping, id)
	}
	t, err := c.prepareEndLocked(m, pid, epoch, commit, true, false)
	if err != nil || t == nil {
		c.mu.Unlock()
		return err
	}
	m.pending = t
	c.mu.Unlock()
	return c.write(ctx, sh, m, t)
}

// prepareEndLocked returns the transition that ends m's transaction
// (Kafka's TransactionCoordinator.endTransaction): nil and no error when
// the transaction already ended that way (a retry). fromClient requires
// the producer's current epoch; otherwise (a fence or a timeout) epoch is
// the epoch to abort with, at least the current one, and fence bumps the
// producer's epoch to it. REQUIRES: c.mu held.
func (c *Coordinator) prepareEndLocked(m *txnMeta, pid int64, epoch int16, commit, fromClient, fence bool) (*transit, error) {
	cur := m.cur
	switch {
	case cur.ProducerID != pid:
		return nil, fmt.Errorf("%w: %q has producer id %d, not %d", ErrInvalidProducerIDMapping, m.id, cur.ProducerID, pid)
	case fromClient && epoch != cur.ProducerEpoch, epoch < cur.ProducerEpoch:
		return nil, fmt.Errorf("%w: epoch %d of %q is not the current %d", ErrProducerFenced, epoch, m.id, cur.ProducerEpoch)
	case m.pending != nil:
		return nil, fmt.Errorf("%w: %q is changing state", ErrConcurrentTransactions, m.id)
	}
	want := "abort"
	if commit {
		want = "commit"
	}
	invalid := fmt.Errorf("%w: cannot %s %q in %s", ErrInvalidTxnState, want, m.id, cur.State)
	switch cur.State {
	case Ongoing:
		t := m.transit()
		t.v.State, t.v.LastUpdateMs = PrepareAbort, c.nowMs()
		if commit {
			t.v.State = PrepareCommit
		}
		if fence {
			t.v.ProducerEpoch, t.lastEpoch = epoch, -1
		}
		return t, nil
	case CompleteCommit:
		if commit {
			return nil, nil
		}
		return nil, invalid
	case CompleteAbort:
		if !commit {
			return nil, nil
		}
		return nil, invalid
	case PrepareCommit:
		if commit {
			return nil, fmt.Errorf("%w: %q is committing", ErrConcurrentTransactions, m.id)
		}
		return nil, invalid
	case PrepareAbort:
		if !commit {
			return nil, fmt.Errorf("%w: %q is aborting", ErrConcurrentTransactions, m.id)
		}
		return nil, invalid
	}
	return nil, invalid
}

// load is coordlog.Options.Load: one attempt to replay partition i and
// install its transactional ids; transactions found in a Prepare state are
// completed. It returns coordlog.ErrStale, installing nothing, when the
// leadership it loads for ended during the replay. Errors wrap ErrBadRecord
// for a record that does not decode.
func (c *Coordinator) load(i int32, current func() bool) (coordlog.Loaded, error) {
	p := c.opts.Partition(i)
	if p == nil {
		return coordlog.Loaded{}, fmt.Errorf("txn: no local replica of %s-%d", Topic, i)
	}
	epoch := p.LeaderEpoch()
	vals := map[string]Value{}
	st, err := coordlog.Replay(p, p.LogEndOffset(), func(_ int64, key, value []byte) error {
		id, err := decodeKey(key)
		if err != nil {
			return err
		}
		if value == nil {
			delete(vals, id)
			return nil
		}
		v, err := decodeValue(value)
		if err != nil {
			return err
		}
		vals[id] = v
		return nil
	})
	if err != nil {
		return coordlog.Loaded{Replay: st}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// current is asked with mu held: an unload after it waits for mu and
	// then removes what is installed here.
	if !current() || c.closed {
		return coordlog.Loaded{}, coordlog.ErrStale
	}
	if old := c.shards[i]; old != nil {
		old.cancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	sh := &shard{index: i, epoch: epoch, txns: make(map[string]*txnMeta, len(vals)), ctx: ctx, cancel: cancel}
	c.shards[i] = sh
	resumed := 0
	for id, v := range vals {
		m := &txnMeta{id: id, cur: v, lastProducerID: -1, lastEpoch: -1}
		sh.txns[id] = m
		if v.State == PrepareCommit || v.State == PrepareAbort {
			c.startCompleteLocked(sh, m)
			resumed++
		}
	}
	return coordlog.Loaded{Replay: st, State: []any{"coordinator_epoch", epoch, "transactional_ids", len(vals), "resumed", resumed}}, nil
}

// unload is coordlog.Options.Unload: partition i's state is dropped and its
// completions stop.
func (c *Coordinator) unload(i int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sh := c.shards[i]; sh != nil {
		sh.cancel()
		delete(c.shards, i)
	}
}
