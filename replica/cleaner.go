package replica

// The log cleaner (cleanup.policy=compact) runs in the storage engine
// (engine/cleaner); the Manager tells it which logs exist, with each
// one's config, high watermark and producer state, and answers with what
// it did.

import (
	"sync"
	"time"

	"github.com/sluice/sluice/config"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/engine/cleaner"
)

// cleanerKeys are the broker keys the log cleaner runs with; a dynamic
// change of any restarts it (ReconfigureCleaner).
type cleanerKeys struct {
	enable     bool
	threads    int
	dedupe     int64
	ioMaxBytes float64
	backoff    time.Duration
}

func cleanerKeysOf(c *config.Config) cleanerKeys {
	return cleanerKeys{c.LogCleanerEnable, c.LogCleanerThreads, c.LogCleanerDedupeBufferSize, c.LogCleanerIOMaxBytesPerSecond, c.LogCleanerBackoff}
}

// startCleaner starts log.cleaner.threads cleaner threads unless
// log.cleaner.enable is false, and returns what stops them (and keeps
// ReconfigureCleaner from starting them again).
func (m *Manager) startCleaner() (stop func() error, err error) {
	m.cleanerMu.Lock()
	defer m.cleanerMu.Unlock()
	if err := m.runCleanerLocked(); err != nil {
		return nil, err
	}
	m.cleanerRunning = true
	return func() error {
		m.cleanerMu.Lock()
		defer m.cleanerMu.Unlock()
		m.cleanerRunning = false
		if cm := m.cleaner.Swap(nil); cm != nil {
			cm.Close()
		}
		return nil
	}, nil
}

// ReconfigureCleaner makes the log cleaner run with c's cleaner keys
// (log.cleaner.threads, .dedupe.buffer.size, .io.max.bytes.per.second,
// .backoff.ms; a dynamic broker config changed one): when they differ from
// the running ones, the cleaner threads stop and start again with them, as
// Kafka's LogCleaner.reconfigure does (a pass in progress is abandoned
// before its swap and redone). Before Start or after stop it only records
// them.
func (m *Manager) ReconfigureCleaner(c *config.Config) error {
	m.cleanerMu.Lock()
	defer m.cleanerMu.Unlock()
	keys := cleanerKeysOf(c)
	if keys == m.cleanerKeys {
		return nil
	}
	m.cleanerKeys = keys
	if !m.cleanerRunning {
		return nil
	}
	if cm := m.cleaner.Swap(nil); cm != nil {
		cm.Close()
	}
	m.log.Info("replica: log cleaner reconfigured", "log.cleaner.threads", keys.threads, "log.cleaner.io.max.bytes.per.second", keys.ioMaxBytes, "log.cleaner.backoff.ms", keys.backoff.Milliseconds())
	return m.runCleanerLocked()
}

// runCleanerLocked starts the cleaner with m.cleanerKeys, unless they
// disable it. REQUIRES: m.cleanerMu held; no cleaner running.
func (m *Manager) runCleanerLocked() error {
	c := m.cleanerKeys
	if !c.enable || c.threads <= 0 {
		m.log.Info("replica: log cleaner disabled: compacted topics are not cleaned", "log.cleaner.enable", c.enable, "log.cleaner.threads", c.threads)
		return nil
	}
	cm, err := cleaner.NewManager(cleaner.Options{
		Threads:             c.threads,
		DedupeBufferSize:    c.dedupe,
		IOMaxBytesPerSecond: c.ioMaxBytes,
		Backoff:             c.backoff,
		Logs:                m.cleanerTargets,
		Now:                 m.now,
		Logger:              m.log,
	})
	if err != nil {
		return err
	}
	m.cleaner.Store(cm)
	cm.Start()
	return nil
}

// wakeCleaner makes an idle cleaner thread look at the logs now (a topic's
// cleanup policy or cleaner config changed).
func (m *Manager) wakeCleaner() {
	if cm := m.cleaner.Load(); cm != nil {
		cm.Wake()
	}
}

// cleanerTargets lists the compacted logs of this broker's replicas.
func (m *Manager) cleanerTargets() []cleaner.Target {
	var out []cleaner.Target
	for _, t := range m.reg.all() {
		if !t.Config.Log.Compact {
			continue
		}
		for _, p := range t.Parts {
			if p != nil {
				out = append(out, cleanerTarget(t, p))
			}
		}
	}
	return out
}

func cleanerTarget(t *Topic, p *Partition) cleaner.Target {
	var once, onceEpochs sync.Once
	var last map[int64]int64
	var epochs map[int64]int16
	return cleaner.Target{
		ID:     engine.PartitionID{Topic: t.Name, Partition: p.Index()},
		Log:    p.Log(),
		Config: t.Config.Log,
		// Nothing past the last stable offset (Kafka's
		// firstUncleanableOffset): a follower may still truncate past
		// the high watermark, and a transaction below it but past the
		// LSO is not decided yet, so its records could hide others.
		Bound: p.LastStableOffset(),
		ProducerLast: func(pid int64) (int64, bool) {
			once.Do(func() { last = p.ProducerLastOffsets() })
			o, ok := last[pid]
			return o, ok
		},
		ProducerEpoch: func(pid int64) (int16, bool) {
			onceEpochs.Do(func() {
				infos := p.Producers()
				epochs = make(map[int64]int16, len(infos))
				for _, pi := range infos {
					epochs[pi.ProducerID] = pi.ProducerEpoch
				}
			})
			e, ok := epochs[pid]
			return e, ok
		},
	}
}

// Cleaning reports whether the log cleaner runs.
func (m *Manager) Cleaning() bool { return m.cleaner.Load() != nil }

// CleanerStatus returns what the cleaner last did to partition p of t;
// false when it has not looked at it or does not run.
func (m *Manager) CleanerStatus(t *Topic, p *Partition) (cleaner.Status, bool) {
	cm := m.cleaner.Load()
	if cm == nil {
		return cleaner.Status{}, false
	}
	return cm.Status(engine.PartitionID{Topic: t.Name, Partition: p.Index()})
}

// CleanerSummary is what topic describe shows of a compacted topic on
// this broker: the highest dirty ratio among its local partitions and the
// last time one of them was cleaned (ms, -1: never since this broker
// started).
func (m *Manager) CleanerSummary(t *Topic) (maxRatio float64, lastCleanedMs int64) {
	lastCleanedMs = -1
	now := m.now()
	for _, p := range t.Parts {
		if p == nil {
			continue
		}
		tg := cleanerTarget(t, p)
		if pr, _ := cleaner.Examine(tg, now); pr.Ratio > maxRatio {
			maxRatio = pr.Ratio
		}
		if st, ok := m.CleanerStatus(t, p); ok && !st.LastCleaned.IsZero() {
			lastCleanedMs = max(lastCleanedMs, st.LastCleaned.UnixMilli())
		}
	}
	return maxRatio, lastCleanedMs
}
