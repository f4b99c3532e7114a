package server

import (
	"time"

	"github.com/sluice/sluice/engine"
)

// High-watermark checkpoints (Kafka's replication-offset-checkpoint).
//
// In cluster mode a replica's log can hold records past what its ISR had
// committed (a follower's unreplicated tail, a former leader's last
// appends). A replica reopened after a restart therefore starts its high
// watermark at the value it last checkpointed, not at its log end, so that
// consumers never read a record that may yet be truncated away; the leader
// then advances it as the ISR confirms. Checkpoints are written every
// hwCheckpointInterval (Kafka's replica.high.watermark.checkpoint.interval.ms)
// and when the broker stops, through the storage backend's optional
// engine.HighWatermarkStore; a backend without it restarts every replica at
// its log start, which is safe and only delays consumers.

const hwCheckpointInterval = 5 * time.Second

// loadHighWatermarks reads the checkpointed high watermarks; a damaged
// checkpoint is logged and ignored (every replica then starts at its log
// start, which is safe).
func (cm *clusterMode) loadHighWatermarks() map[engine.PartitionID]int64 {
	hs, ok := cm.s.store.(engine.HighWatermarkStore)
	if !ok {
		return nil
	}
	m, err := hs.HighWatermarks()
	if err != nil {
		cm.log.Warn("server: ignoring damaged high-watermark checkpoint; replicas start at their log start", "err", err)
		return nil
	}
	return m
}

// checkpointHighWatermarks saves the high watermark of every local replica.
func (cm *clusterMode) checkpointHighWatermarks() {
	hs, ok := cm.s.store.(engine.HighWatermarkStore)
	if !ok {
		return
	}
	m := map[engine.PartitionID]int64{}
	for _, t := range cm.s.topics.all() {
		for _, p := range t.parts {
			if p != nil {
				m[engine.PartitionID{Topic: t.name, Partition: p.index}] = p.HighWatermark()
			}
		}
	}
	if err := hs.SaveHighWatermarks(m); err != nil {
		cm.log.Error("server: checkpoint high watermarks", "err", err)
	}
}

// hwCheckpointLoop checkpoints the high watermarks periodically until close.
func (cm *clusterMode) hwCheckpointLoop() {
	defer cm.wg.Done()
	t := time.NewTicker(hwCheckpointInterval)
	defer t.Stop()
	for {
		select {
		case <-cm.stop:
			return
		case <-t.C:
			cm.checkpointHighWatermarks()
		}
	}
}
