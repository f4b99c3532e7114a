package replica

// High-watermark checkpoints (Kafka's replication-offset-checkpoint), in
// cluster mode: a replica's log can hold records past what its ISR had
// committed (a follower's unreplicated tail, a former leader's last
// appends), so a replica reopened after a restart starts its high
// watermark at the value it last checkpointed, not at its log end, and
// consumers never read a record that may yet be truncated away.
// Checkpoints are written every HighWatermarkCheckpointInterval and at
// Close, through the backend's optional engine.HighWatermarkStore; a
// backend without it restarts every replica at its log start, which is
// safe and only delays consumers. (Recovery-point checkpoints are the
// store's, which Start has it write: see flush.go.)

import "github.com/sluice/sluice/engine"

// loadHighWatermarks reads the checkpointed high watermarks; a damaged
// checkpoint is logged and ignored (every replica then starts at its log
// start, which is safe).
func (m *Manager) loadHighWatermarks() map[engine.PartitionID]int64 {
	hs, ok := m.store.(engine.HighWatermarkStore)
	if !ok {
		return nil
	}
	hw, err := hs.HighWatermarks()
	if err != nil {
		m.log.Warn("replica: ignoring damaged high-watermark checkpoint; replicas start at their log start", "err", err)
		return nil
	}
	return hw
}

// checkpointHighWatermarks saves the high watermark of every local
// replica.
func (m *Manager) checkpointHighWatermarks() {
	hs, ok := m.store.(engine.HighWatermarkStore)
	if !ok {
		return
	}
	hw := map[engine.PartitionID]int64{}
	m.each(func(t *Topic, p *Partition) {
		hw[engine.PartitionID{Topic: t.Name, Partition: p.Index()}] = p.HighWatermark()
	})
	if err := hs.SaveHighWatermarks(hw); err != nil {
		m.log.Error("replica: checkpoint high watermarks", "err", err)
	}
}
