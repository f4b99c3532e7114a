package replica

// High-watermark checkpoints (Kafka's replication-offset-checkpoint), in
// cluster mode: a replica's log can hold records past what its ISR had
// committed (a follower's unreplicated tail, a former leader's last
// appends), so a replica reopened after a restart starts its high
// watermark at the value it last checkpointed, not at its log end, and
// consumers never read a record that may yet be truncated away.
// Checkpoints are written every HighWatermarkCheckpointInterval and at
// Close, one per log dir (each dir's replicas in the store of that dir,
// as Kafka keeps a replication-offset-checkpoint per dir), through the
// backend's optional engine.HighWatermarkStore; a backend without it
// restarts every replica at its log start, which is safe and only delays
// consumers. (Recovery-point checkpoints are the stores', which Start has
// them write: see flush.go.)

import "github.com/sluice/sluice/engine"

// loadHighWatermarks reads the checkpointed high watermarks of every live
// dir; a damaged checkpoint is logged and ignored (the dir's replicas then
// start at their log start, which is safe).
func (m *Manager) loadHighWatermarks() map[engine.PartitionID]int64 {
	all := map[engine.PartitionID]int64{}
	m.eachLiveStore(func(d *logDir) {
		hw, err := d.store.HighWatermarks()
		if err != nil {
			m.log.Warn("replica: ignoring damaged high-watermark checkpoint; replicas start at their log start", "dir", d.path, "err", err)
			return
		}
		for id, off := range hw {
			if m.dirOf.m[id] == d {
				all[id] = off
			}
		}
	})
	return all
}

// checkpointHighWatermarks saves the high watermark of every local
// replica in the checkpoint of its dir (Kafka's
// replication-offset-checkpoint, one per dir).
func (m *Manager) checkpointHighWatermarks() {
	byDir := map[*logDir]map[engine.PartitionID]int64{}
	for _, d := range m.liveDirs() {
		byDir[d] = map[engine.PartitionID]int64{}
	}
	m.each(func(t *Topic, p *Partition) {
		id := engine.PartitionID{Topic: t.Name, Partition: p.Index()}
		if hw := byDir[m.logDirOf(id)]; hw != nil {
			hw[id] = p.HighWatermark()
		}
	})
	for d, hw := range byDir {
		if err := d.store.SaveHighWatermarks(hw); err != nil {
			m.log.Error("replica: checkpoint high watermarks", "dir", d.path, "err", err)
			if isIOError(err) {
				m.failDir(d, err)
			}
		}
	}
}
