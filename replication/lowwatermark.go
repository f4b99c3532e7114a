package replication

// The low watermark of a partition (Kafka's Partition.lowWatermarkIfLeader):
// the least log start offset among the leader and those of its followers
// whose broker is alive, each follower's as it sent it in its last fetch
// (Kafka's Replica.logStartOffset, UNKNOWN until its first fetch since it
// became a follower of this leader). A DeleteRecords is answered once the
// low watermark has reached the offset it asked for (Kafka's
// DelayedDeleteRecords: server/21_delete_records.go), so that the records
// are gone from every live replica and not only from the leader.

// UpdateFollowerLogStart records logStart, the log start offset follower
// replicaID sent in a fetch this leader served (Kafka's
// updateFollowerFetchState with followerStartOffset). A change wakes the
// waiters on Changed. It does nothing on a replica that does not lead or
// for a broker that is not one of its followers. Safe for concurrent use.
func (p *Partition) UpdateFollowerLogStart(replicaID int32, logStart int64) {
	p.rmu.Lock()
	f := p.rs.followers[replicaID]
	changed := p.rs.leader && f != nil && f.logStart != logStart
	if changed {
		f.logStart = logStart
	}
	p.rmu.Unlock()
	if changed {
		p.notify()
	}
}

// LowWatermark returns the partition's low watermark (see the top of this
// file): LogStart, lowered to the log start of every follower for which
// alive reports true (nil: every follower). A follower whose log start
// is not known yet holds it at -1. ErrNotLeader when this replica does
// not lead, ErrClosed once it is closed. Safe for concurrent use.
func (p *Partition) LowWatermark(alive func(brokerID int32) bool) (int64, error) {
	p.hwMu.Lock()
	closed := p.closed
	p.hwMu.Unlock()
	if closed {
		return -1, ErrClosed
	}
	p.rmu.Lock()
	defer p.rmu.Unlock()
	if !p.rs.leader {
		return -1, ErrNotLeader
	}
	lw := p.LogStart()
	for id, f := range p.rs.followers {
		if alive == nil || alive(id) {
			lw = min(lw, f.logStart)
		}
	}
	return lw, nil
}
