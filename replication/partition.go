package replication

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/zerocopy"
)

// Options configure a Partition. Zero values mean the documented default.
type Options struct {
	Topic       string
	Partition   int32
	LeaderEpoch int32
	// LogAppendTime: the topic has message.timestamp.type=LogAppendTime.
	LogAppendTime bool
	// FlushEveryAppend makes the partition call Log.Flush after every
	// coalesced append and before advancing the high watermark, so acks=-1
	// answers only durable data. Leave it false when the log itself was
	// created with LogConfig.FlushMessages=1 (its Append already fsyncs).
	FlushEveryAppend bool
	// ProducerScanBytes bounds how much of the log tail NewPartition reads
	// to rebuild idempotent-producer state. 0: DefaultProducerScanBytes;
	// < 0: do not scan.
	ProducerScanBytes int64
	Now               func() time.Time // nil: time.Now
	Logger            *slog.Logger     // nil: slog.Default()
}

// DefaultProducerScanBytes is how much of a log's tail is scanned for
// producer state when Options.ProducerScanBytes is 0.
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
}

// Partition is one partition replica. In this version it is always the
// leader. Safe for concurrent use.
type Partition struct {
	log    engine.Log
	opts   Options
	now    func() time.Time
	logger *slog.Logger

	leaderEpoch   atomic.Int32
	logAppendTime atomic.Bool
	hw            atomic.Int64

	// hwMu guards changed and closed.
	hwMu    sync.Mutex
	changed chan struct{} // closed when hw advances; nil until someone asks
	closed  bool

	// qmu guards the append queue. Invariant: appending is true while a
	// round runs or is handed over, and the queue is empty when it is false.
	qmu       sync.Mutex
	idle      sync.Cond // signalled (with qmu) when appending turns false
	queue     []*appendReq
	spare     []*appendReq // the previous round's slice, reused
	appending bool
	qclosed   bool

	// Owned by the goroutine leading the current round (see append.go).
	producers *producerState
	roundBuf  []byte

	appends atomic.Int64 // engine appends made, for tests and stats
}

// NewPartition takes ownership of log (Close closes it; when NewPartition
// fails, the caller still owns it) and rebuilds the idempotent-producer state
// from the last Options.ProducerScanBytes of the log (see producers.go).
// The partition starts as leader at Options.LeaderEpoch with the high
// watermark at the log end.
func NewPartition(log engine.Log, opts Options) (*Partition, error) {
	p := &Partition{log: log, opts: opts, now: opts.Now, logger: opts.Logger}
	if p.now == nil {
		p.now = time.Now
	}
	if p.logger == nil {
		p.logger = slog.Default()
	}
	p.leaderEpoch.Store(opts.LeaderEpoch)
	p.logAppendTime.Store(opts.LogAppendTime)
	p.idle.L = &p.qmu
	p.producers = newProducerState()
	scan := opts.ProducerScanBytes
	if scan == 0 {
		scan = DefaultProducerScanBytes
	}
	if err := rebuildProducers(p.producers, log, scan); err != nil {
		return nil, err
	}
	p.logger.Debug("replication: partition open", "topic", opts.Topic, "partition", opts.Partition,
		"start", log.StartOffset(), "end", log.EndOffset(), "producers", len(p.producers.producers))
	// Single node: everything in the local log is committed.
	p.hw.Store(log.EndOffset())
	return p, nil
}

func (p *Partition) isClosed() bool {
	p.hwMu.Lock()
	defer p.hwMu.Unlock()
	return p.closed
}

// advanceHW raises the high watermark to hw and wakes Changed waiters.
func (p *Partition) advanceHW(hw int64) {
	p.hwMu.Lock()
	if hw > p.hw.Load() {
		p.hw.Store(hw)
		if p.changed != nil {
			close(p.changed)
			p.changed = nil
		}
	}
	p.hwMu.Unlock()
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

// LastStableOffset equals the high watermark (no transactions).
func (p *Partition) LastStableOffset() int64 { return p.hw.Load() }

// LogStartOffset returns the log's first offset.
func (p *Partition) LogStartOffset() int64 { return p.log.StartOffset() }

// LogEndOffset returns the offset the next record will get.
func (p *Partition) LogEndOffset() int64 { return p.log.EndOffset() }

// LeaderEpoch returns the partition's current leader epoch.
func (p *Partition) LeaderEpoch() int32 { return p.leaderEpoch.Load() }

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Changed returns a channel closed the next time the high watermark
// advances or the partition closes.
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

// EndOffsetForEpoch answers OffsetForLeaderEpoch.
func (p *Partition) EndOffsetForEpoch(epoch int32) (int32, int64) {
	return engine.EndOffsetForEpoch(p.log.LeaderEpochs(), epoch, p.log.EndOffset())
}

// SetLogAppendTime switches message.timestamp.type for later appends.
func (p *Partition) SetLogAppendTime(on bool) { p.logAppendTime.Store(on) }

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
	for p.appending {
		p.idle.Wait()
	}
	p.qmu.Unlock()

	p.hwMu.Lock()
	if p.closed {
		p.hwMu.Unlock()
		return nil
	}
	p.closed = true
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
	p.hwMu.Unlock()
	return p.log.Close()
}
