package server

import (
	"sync"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/engine/cleaner"
)

// The log cleaner (cleanup.policy=compact) runs in the storage engine
// (engine/cleaner); the server tells it which logs exist, with each one's
// config, high watermark and producer state, and answers describe
// requests with what it did.

// startCleaner starts log.cleaner.threads cleaner threads unless
// log.cleaner.enable is false.
func (s *Server) startCleaner() error {
	c := s.cfg
	if !c.LogCleanerEnable || c.LogCleanerThreads <= 0 {
		s.log.Info("server: log cleaner disabled: compacted topics are not cleaned", "log.cleaner.enable", c.LogCleanerEnable, "log.cleaner.threads", c.LogCleanerThreads)
		return nil
	}
	m, err := cleaner.NewManager(cleaner.Options{
		Threads:             c.LogCleanerThreads,
		DedupeBufferSize:    c.LogCleanerDedupeBufferSize,
		IOMaxBytesPerSecond: c.LogCleanerIOMaxBytesPerSecond,
		Backoff:             c.LogCleanerBackoff,
		Logs:                s.cleanerTargets,
		Now:                 s.now,
		Logger:              s.log,
	})
	if err != nil {
		return err
	}
	s.cleaner = m
	m.Start()
	return nil
}

// stopCleaner stops the cleaner threads (before the logs close).
func (s *Server) stopCleaner() {
	if s.cleaner != nil {
		s.cleaner.Close()
	}
}

// wakeCleaner makes an idle cleaner thread look at the logs now (a topic's
// cleanup policy or cleaner config changed).
func (s *Server) wakeCleaner() {
	if s.cleaner != nil {
		s.cleaner.Wake()
	}
}

// cleanerTargets lists the compacted logs of this broker's replicas.
func (s *Server) cleanerTargets() []cleaner.Target {
	var out []cleaner.Target
	for _, t := range s.topics.all() {
		if !t.cfg.log.Compact {
			continue
		}
		for _, p := range t.parts {
			if p == nil {
				continue
			}
			out = append(out, s.cleanerTarget(t, p))
		}
	}
	return out
}

func (s *Server) cleanerTarget(t *topic, p *partition) cleaner.Target {
	var once sync.Once
	var last map[int64]int64
	return cleaner.Target{
		ID:     engine.PartitionID{Topic: t.name, Partition: p.Index()},
		Log:    p.Log(),
		Config: t.cfg.log,
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
	}
}

// cleanerStatus is what topic describe shows of a compacted topic on this
// broker: the highest dirty ratio among its local partitions and the last
// time one of them was cleaned (ms, -1: never since this broker started).
func (s *Server) cleanerStatus(t *topic) (maxRatio float64, lastCleanedMs int64) {
	lastCleanedMs = -1
	now := s.now()
	for _, p := range t.parts {
		if p == nil {
			continue
		}
		tg := s.cleanerTarget(t, p)
		if pr, _ := cleaner.Examine(tg, now); pr.Ratio > maxRatio {
			maxRatio = pr.Ratio
		}
		if s.cleaner != nil {
			if st, ok := s.cleaner.Status(tg.ID); ok && !st.LastCleaned.IsZero() {
				lastCleanedMs = max(lastCleanedMs, st.LastCleaned.UnixMilli())
			}
		}
	}
	return maxRatio, lastCleanedMs
}
