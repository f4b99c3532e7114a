package replication

// ProducerLastOffsets returns, for each producer in the partition's
// idempotent-producer table (those not expired), the last offset of its
// last batch: Kafka's lastDataOffset, whose batch the log cleaner keeps,
// even emptied, so that the producer's sequence and epoch survive cleaning
// and a restart that rebuilds the table from the log; -1 for a producer
// whose table entry holds no batch (its last word here was a marker, which
// the cleaner then keeps for its epoch: compact.Rules.ProducerLast). It waits for the
// append round in progress and holds the next ones off while it reads.
func (p *Partition) ProducerLastOffsets() map[int64]int64 {
	var m map[int64]int64
	p.withProducers(func(ps *producerState) {
		m = make(map[int64]int64, len(ps.producers))
		for pid, e := range ps.producers {
			m[pid] = -1
			if b, ok := e.last(); ok {
				m[pid] = b.lastOffset
			}
		}
	})
	return m
}

// withProducers runs fn with the producer table to itself: it waits for
// a follower operation and the append round in progress, and holds the
// next ones off until fn returns.
func (p *Partition) withProducers(fn func(*producerState)) {
	p.fmu.Lock() // follower appends teach the table too
	defer p.fmu.Unlock()
	p.qmu.Lock()
	p.waitIdleLocked()
	p.appending = true // lead an empty round: the table is ours
	p.qmu.Unlock()

	fn(p.producerTable())

	p.qmu.Lock()
	if p.q != nil && len(p.q.queue) > 0 {
		p.q.queue[0].wake <- true // hand the lead on, as runRound does
	} else {
		p.endRoundLocked()
	}
	p.qmu.Unlock()
}
