package txn

import (
	"math"
	"time"
)

// job is one background transition to write.
type job struct {
	sh *shard
	m  *txnMeta
	t  *transit
}

// AbortTimedOut aborts every ongoing transaction older than its timeout
// (Kafka's abortTimedOutTransactions, every
// transaction.abort.timed.out.transaction.cleanup.interval.ms): its
// producer's epoch is bumped, so the producer is fenced, and the abort
// completes like any other. Failures are logged; the next run tries again.
func (c *Coordinator) AbortTimedOut() {
	now := c.nowMs()
	var jobs []job
	c.mu.Lock()
	for _, sh := range c.shards {
		for _, m := range sh.txns {
			v := m.cur
			if v.State != Ongoing || m.pending != nil || v.StartMs+int64(v.TimeoutMs) >= now {
				continue
			}
			epoch, fence := v.ProducerEpoch, v.ProducerEpoch < math.MaxInt16
			if fence {
				epoch++
			}
			t, err := c.prepareEndLocked(m, v.ProducerID, epoch, false, false, fence)
			if err != nil || t == nil {
				continue
			}
			m.pending = t
			jobs = append(jobs, job{sh, m, t})
		}
	}
	c.mu.Unlock()
	for _, j := range jobs {
		c.opts.Logger.Info("txn: aborting a timed-out transaction", "transactional_id", j.m.id,
			"producer_id", j.t.v.ProducerID, "fenced_epoch", j.t.v.ProducerEpoch, "timeout_ms", j.t.v.TimeoutMs)
		if err := c.write(j.sh.ctx, j.sh, j.m, j.t); err != nil {
			c.opts.Logger.Warn("txn: abort a timed-out transaction", "transactional_id", j.m.id, "err", err)
		}
	}
}

// ExpireTransactionalIDs forgets every transactional id without a
// transaction that has not been used for transactional.id.expiration.ms
// (Kafka's removeExpiredTransactionalIds): a tombstone is written, and the
// id's next InitProducerId starts over with a new producer id. Failures
// are logged; the next run tries again.
func (c *Coordinator) ExpireTransactionalIDs() {
	cutoff := c.opts.Now().Add(-c.opts.IDExpiration).UnixMilli()
	var jobs []job
	c.mu.Lock()
	for _, sh := range c.shards {
		for _, m := range sh.txns {
			switch m.cur.State {
			case Empty, CompleteCommit, CompleteAbort:
			default:
				continue
			}
			if m.pending != nil || m.cur.LastUpdateMs > cutoff {
				continue
			}
			t := m.transit()
			t.v.State, t.v.Partitions = Dead, nil
			m.pending = t
			jobs = append(jobs, job{sh, m, t})
		}
	}
	c.mu.Unlock()
	for _, j := range jobs {
		if err := c.write(j.sh.ctx, j.sh, j.m, j.t); err != nil {
			c.opts.Logger.Warn("txn: expire transactional id", "transactional_id", j.m.id, "err", err)
			continue
		}
		c.opts.Logger.Info("txn: expired transactional id", "transactional_id", j.m.id,
			"idle", time.Duration(c.nowMs()-j.t.v.LastUpdateMs)*time.Millisecond)
	}
}
