package cleaner

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/sluice/sluice/engine"
)

// Options configure a Manager: the broker's log.cleaner.* keys.
type Options struct {
	// Threads is log.cleaner.threads; each has its own offset map.
	Threads int
	// DedupeBufferSize is log.cleaner.dedupe.buffer.size, divided
	// among the threads: the memory of all offset maps together, the
	// cleaner's memory bound whatever the number of keys.
	DedupeBufferSize int64
	// IOMaxBytesPerSecond is log.cleaner.io.max.bytes.per.second, read
	// plus written by all threads together; <= 0 or +Inf: unthrottled.
	IOMaxBytesPerSecond float64
	// Backoff is log.cleaner.backoff.ms: how long a thread sleeps when
	// no log is cleanable.
	Backoff time.Duration
	// Logs lists the candidate logs each time a thread looks for work.
	Logs   func() []Target
	Now    func() time.Time // nil: time.Now
	Logger *slog.Logger     // nil: slog.Default()
}

// Status is what the manager knows of one log, for describe and metrics.
type Status struct {
	LastCleaned time.Time // zero: never, by this process
	LastResult  Result
	LastError   string // the last round's error, "" when it succeeded
	Rounds      int64
}

// Manager runs the cleaner threads. Start it with Start, stop it with
// Close.
type Manager struct {
	opts     Options
	throttle *throttler

	mu       sync.Mutex
	busy     map[engine.PartitionID]bool // being cleaned by a thread
	status   map[engine.PartitionID]*Status
	failures map[engine.PartitionID]time.Time // last failed round, for backoff
	wake     chan struct{}

	stop chan struct{}
	wg   sync.WaitGroup
}

// NewManager checks opts and returns a manager that has not started.
func NewManager(opts Options) (*Manager, error) {
	if opts.Threads < 1 {
		opts.Threads = 1
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Backoff <= 0 {
		opts.Backoff = 15 * time.Second
	}
	per := opts.DedupeBufferSize / int64(opts.Threads)
	if per > math.MaxInt32 {
		per = math.MaxInt32 // Kafka caps each thread's map at 2 GiB too
	}
	m := &Manager{
		opts:     opts,
		busy:     map[engine.PartitionID]bool{},
		status:   map[engine.PartitionID]*Status{},
		failures: map[engine.PartitionID]time.Time{},
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
	}
	m.throttle = newThrottler(opts.IOMaxBytesPerSecond, m.stop)
	// Check the map size now: a cleaner that can hold no key is a
	// configuration error at startup, as in Kafka.
	if _, err := New(int(per), nil); err != nil {
		return nil, err
	}
	return m, nil
}

// Start starts the threads.
func (m *Manager) Start() {
	per := int(min(m.opts.DedupeBufferSize/int64(m.opts.Threads), math.MaxInt32))
	for i := 0; i < m.opts.Threads; i++ {
		c, _ := New(per, m.throttle.take)
		c.stop = m.stop
		m.wg.Add(1)
		go m.run(i, c)
	}
}

// Close stops the threads, interrupting a throttled or backing-off one,
// and waits for a round in progress to end its current step.
func (m *Manager) Close() {
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	m.wg.Wait()
}

// Wake makes an idle thread look for work now (after a config change).
func (m *Manager) Wake() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Status returns what the manager knows of id.
func (m *Manager) Status(id engine.PartitionID) (Status, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.status[id]
	if !ok {
		return Status{}, false
	}
	return *s, true
}

// Forget drops id's status (its log was deleted).
func (m *Manager) Forget(id engine.PartitionID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.status, id)
	delete(m.failures, id)
}

func (m *Manager) run(thread int, c *Cleaner) {
	defer m.wg.Done()
	for {
		select {
		case <-m.stop:
			return
		default:
		}
		t, ok := m.pick()
		if !ok {
			select {
			case <-m.stop:
				return
			case <-m.wake:
			case <-time.After(m.opts.Backoff):
			}
			continue
		}
		m.cleanOne(thread, c, t)
	}
}

// pick chooses the log to clean: an overdue one first, then the highest
// dirty ratio, as Kafka's grabFilthiestCompactedLog; it marks it busy.
func (m *Manager) pick() (Target, bool) {
	now := m.opts.Now()
	var best Target
	var bestP Progress
	found := false
	m.mu.Lock()
	busy := make(map[engine.PartitionID]bool, len(m.busy))
	for id := range m.busy {
		busy[id] = true
	}
	failures := make(map[engine.PartitionID]time.Time, len(m.failures))
	for id, at := range m.failures {
		failures[id] = at
	}
	m.mu.Unlock()
	for _, t := range m.opts.Logs() {
		if !t.Config.Compact || busy[t.ID] {
			continue
		}
		if at, ok := failures[t.ID]; ok && now.Sub(at) < m.opts.Backoff {
			continue
		}
		p, _ := Examine(t, now)
		if !p.Cleanable {
			continue
		}
		// Kafka's grabFilthiestCompactedLog: the highest dirty ratio
		// among the eligible logs (overdue ones are eligible below the
		// minimum ratio).
		if !found || p.Ratio > bestP.Ratio {
			best, bestP, found = t, p, true
		}
	}
	if !found {
		return Target{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.busy[best.ID] {
		return Target{}, false // another thread took it meanwhile
	}
	m.busy[best.ID] = true
	return best, true
}

func (m *Manager) cleanOne(thread int, c *Cleaner, t Target) {
	res, err := c.Clean(t, m.opts.Now())
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.busy, t.ID)
	st := m.status[t.ID]
	if st == nil {
		st = &Status{}
		m.status[t.ID] = st
	}
	st.Rounds++
	st.LastResult = res
	switch {
	case err == nil && res.CleanedTo <= res.Progress.FirstDirty:
		// Nothing to do after all (the dirty part held nothing the map
		// could take): back off rather than pick it again at once.
		m.failures[t.ID] = m.opts.Now()
	case err == nil:
		delete(m.failures, t.ID)
		st.LastError = ""
		if res.CleanedTo > res.Progress.FirstDirty {
			st.LastCleaned = m.opts.Now()
			s := res.Stats
			m.opts.Logger.Info("cleaner: cleaned log", "thread", thread, "topic", t.ID.Topic, "partition", t.ID.Partition,
				"from", res.Progress.FirstDirty, "to", res.CleanedTo, "dirtyRatio", res.Progress.Ratio,
				"segments", res.Segments, "groups", res.Groups, "readMB", float64(s.BytesRead+res.BuildRead)/(1<<20),
				"writtenMB", float64(s.BytesWritten)/(1<<20), "recordsRead", s.RecordsRead, "recordsKept", s.RecordsKept,
				"took", res.Took.Round(time.Millisecond))
		}
	case errors.Is(err, engine.ErrClosed), errors.Is(err, errStopped):
		// Deleted or closed under us, or shutting down: nothing to report.
		m.failures[t.ID] = m.opts.Now()
	default:
		st.LastError = err.Error()
		m.failures[t.ID] = m.opts.Now()
		level := slog.LevelError
		if errors.Is(err, engine.ErrCleanConflict) {
			level = slog.LevelInfo // truncated or retention ran: try again later
		}
		m.opts.Logger.Log(context.Background(), level, "cleaner: round failed; backing off", "thread", thread, "topic", t.ID.Topic,
			"partition", t.ID.Partition, "backoff", m.opts.Backoff, "err", err)
	}
}
