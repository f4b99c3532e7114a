package coordlog

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/sluice/sluice/internal/safe"
)

// DefaultRetryBackoff is the pause between two attempts of a failed load.
const DefaultRetryBackoff = time.Second

// ErrStale is returned by an Options.Load that found, before installing
// anything, that its leadership generation is no longer the owned one. The
// load is then done: it is not an error and is not retried.
var ErrStale = errors.New("coordlog: load of a stale leadership generation")

// Options configures New.
type Options struct {
	// Topic names the internal topic in log lines.
	Topic string
	// Load builds the state of partition i from its log (Replay) and
	// installs it. It runs on a goroutine of its own and is retried after
	// RetryBackoff until it returns nil or ErrStale, this broker stops
	// leading i, or Close is called.
	//
	// Loads never overlap: Partitions runs one Load at a time (of any
	// partition), so the load of a later leadership of i starts only after
	// the load of an earlier one returned, and its state is installed last.
	// current reports whether the leadership the load runs for is still
	// the owned one; Load calls it right before installing and returns
	// ErrStale, installing nothing, when it is false. A running load is
	// not interrupted: leadership may still end between current and the
	// install (Unload has then already run; i is not marked loaded), and a
	// later leadership's load, which runs after it, installs its own state.
	// Required.
	// On success it reports what it read and built (Loaded), for the
	// "coordlog: loaded partition" log line.
	Load func(i int32, current func() bool) (Loaded, error)
	// Unload drops the state of partition i. OnRole calls it synchronously
	// after ownership of i ended, without holding any lock. Required.
	Unload func(i int32)
	// RetryBackoff is the pause between load attempts. 0:
	// DefaultRetryBackoff.
	RetryBackoff time.Duration
	// Logger: nil means slog.Default().
	Logger *slog.Logger
}

// Loaded is what a successful Options.Load reports: the log line of the
// load carries it next to the time the load took, so that an operator sees
// why a load was slow (a log the cleaner has not compacted yet replays every
// write since the topic was created).
type Loaded struct {
	// Replay is what Replay read.
	Replay ReplayStats
	// State summarizes the state the load built, as alternating slog keys
	// and values ("groups", 3, "offsets", 100): what they mean is the state
	// machine's business.
	State []any
}

// Partitions tracks the partitions of one internal topic that this broker
// leads and runs their loads. Create it with New. Safe for concurrent use.
type Partitions struct {
	opts Options
	stop chan struct{} // closed by Close: load retries stop
	wg   sync.WaitGroup
	// loadMu is held for each call of opts.Load: loads run one at a time,
	// so an earlier generation's load, however slow, cannot install its
	// state after a later generation's. Lock order: loadMu before mu (a
	// Load calls current, which takes mu).
	loadMu sync.Mutex

	mu sync.Mutex
	// parts holds the partitions this broker leads: loading until their
	// load succeeds. gen grows with every transition (OnRole that changes
	// the role), and parts[i].gen is the gen of the transition that made
	// this broker i's leader; a load carries that gen and marks i loaded
	// only if parts[i].gen still equals it.
	parts  map[int32]*part
	gen    uint64
	closed bool
}

type part struct {
	loading bool
	gen     uint64
	// loaded is closed when the load marks the partition loaded, or when
	// the leadership ends while it is loading (WaitLoaded).
	loaded chan struct{}
}

// New returns a Partitions that owns nothing.
func New(opts Options) *Partitions {
	if opts.RetryBackoff <= 0 {
		opts.RetryBackoff = DefaultRetryBackoff
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Partitions{opts: opts, stop: make(chan struct{}), parts: map[int32]*part{}}
}

// State reports whether this broker leads partition i (owned) and, if so,
// whether its load is still running (loading). It is cheap: coordinators
// call it on every request.
func (ps *Partitions) State(i int32) (owned, loading bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.parts[i]
	if p == nil {
		return false, false
	}
	return true, p.loading
}

// Loading reports whether some partition this broker leads is still
// loading (Kafka's GroupMetadataManager.isLoading: ListGroups answers
// COORDINATOR_LOAD_IN_PROGRESS then, as its answer would be partial).
func (ps *Partitions) Loading() bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.parts {
		if p.loading {
			return true
		}
	}
	return false
}

// ErrNotOwned is returned by WaitLoaded for a partition this broker does not
// lead, or stopped leading while it waited.
var ErrNotOwned = errors.New("coordlog: partition not led here")

// WaitLoaded waits until this broker's leadership of partition i is loaded,
// and returns nil then; ErrNotOwned when it does not lead i (or the
// leadership it waited for ended); ctx's error when ctx is done first. A
// single node that just created its internal topic uses it to answer its
// first requests from a loaded state.
func (ps *Partitions) WaitLoaded(ctx context.Context, i int32) error {
	ps.mu.Lock()
	p := ps.parts[i]
	ps.mu.Unlock()
	if p == nil {
		return ErrNotOwned
	}
	select {
	case <-p.loaded:
		ps.mu.Lock()
		defer ps.mu.Unlock()
		if ps.parts[i] != p || p.loading {
			return ErrNotOwned
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-ps.stop:
		return ErrNotOwned
	}
}

// OnRole is called after this broker's role for partition i changed or was
// restated (LeaderAndIsr). Becoming leader starts a load; becoming a
// follower unloads at once, so no request is served from the state of a
// partition led elsewhere. A restated role (a new epoch or ISR of the same
// role) changes nothing. After Close, becoming leader marks i loading and
// starts no load.
func (ps *Partitions) OnRole(i int32, leader bool) {
	ps.mu.Lock()
	cur := ps.parts[i]
	switch {
	case !leader && cur == nil, leader && cur != nil:
		ps.mu.Unlock()
		return
	case !leader:
		if cur.loading {
			close(cur.loaded) // wakes WaitLoaded, which sees i is gone
		}
		delete(ps.parts, i)
		ps.gen++
		ps.mu.Unlock()
		ps.opts.Unload(i)
		ps.opts.Logger.Info("coordlog: unloaded partition", "topic", ps.opts.Topic, "partition", i)
		return
	}
	ps.gen++
	gen := ps.gen
	ps.parts[i] = &part{loading: true, gen: gen, loaded: make(chan struct{})}
	if ps.closed {
		ps.mu.Unlock()
		return
	}
	ps.wg.Add(1)
	ps.mu.Unlock()
	go ps.load(i, gen)
}

// Close stops retrying loads and waits for the loads still running to
// return. It is idempotent.
func (ps *Partitions) Close() {
	ps.mu.Lock()
	if !ps.closed {
		ps.closed = true
		close(ps.stop)
	}
	ps.mu.Unlock()
	ps.wg.Wait()
}

// load runs Load for partition i, leader since generation gen, until it
// succeeds or is no longer wanted (gen is no longer current, Load returned
// ErrStale, or Close), and then marks i loaded if gen is still current.
// Each attempt holds loadMu.
func (ps *Partitions) load(i int32, gen uint64) {
	defer ps.wg.Done()
	start := time.Now()
	current := func() bool { return ps.current(i, gen) }
	var loaded Loaded
	attempt := 0
	for ; ; attempt++ {
		ps.loadMu.Lock()
		if !current() { // lost while waiting for an earlier load
			ps.loadMu.Unlock()
			return
		}
		err := safe.Call(ps.opts.Logger, "coordlog: load "+ps.opts.Topic, func() (err error) {
			loaded, err = ps.opts.Load(i, current)
			return err
		})
		ps.loadMu.Unlock()
		if err == nil {
			break
		}
		if errors.Is(err, ErrStale) {
			ps.opts.Logger.Info("coordlog: dropped the load of a past leadership", "topic", ps.opts.Topic, "partition", i)
			return
		}
		ps.opts.Logger.Warn("coordlog: load partition", "topic", ps.opts.Topic, "partition", i, "attempt", attempt, "err", err)
		t := time.NewTimer(ps.opts.RetryBackoff)
		select {
		case <-ps.stop:
			t.Stop()
			return
		case <-t.C:
		}
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p := ps.parts[i]; p != nil && p.gen == gen {
		p.loading = false
		close(p.loaded)
		r := loaded.Replay
		attrs := append([]any{"topic", ps.opts.Topic, "partition", i, "took", time.Since(start), "attempts", attempt + 1,
			"records", r.Records, "batches", r.Batches, "bytes", r.Bytes}, loaded.State...)
		ps.opts.Logger.Info("coordlog: loaded partition", attrs...)
	}
}

// current reports whether this broker still leads i since generation gen.
func (ps *Partitions) current(i int32, gen uint64) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.parts[i]
	return p != nil && p.gen == gen
}
