package txn

import (
	"context"
	"errors"
	"slices"
	"time"
)

// Markers are the COMMIT or ABORT markers that end one transaction, one
// per partition of it.
type Markers struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Commit          bool
	// CoordinatorEpoch is the leader epoch of the coordinator's
	// __transaction_state partition when it was loaded.
	CoordinatorEpoch int32
	Partitions       []TopicPartition
}

// MarkerWriter writes transaction markers to the leaders of their
// partitions (Kafka's TransactionMarkerChannelManager): locally or as
// WriteTxnMarkers requests to other brokers.
type MarkerWriter interface {
	// WriteMarkers makes one attempt to write m's marker to each of
	// m.Partitions and returns the partitions that were not written, with
	// why. A partition missing from the result was written, or no longer
	// exists (its topic was deleted: no marker is needed). An error
	// wrapping ErrMarkerFenced stops the completion of the transaction;
	// any other error is retried after a backoff, for as long as this
	// coordinator leads the transaction's partition. It returns early,
	// with errors, when ctx is done. The result is the caller's.
	WriteMarkers(ctx context.Context, m Markers) map[TopicPartition]error
}

// startCompleteLocked starts the completion of m's transaction, which is
// in PrepareCommit or PrepareAbort. REQUIRES: c.mu held.
func (c *Coordinator) startCompleteLocked(sh *shard, m *txnMeta) {
	if c.closed {
		return
	}
	mk := Markers{
		TransactionalID: m.id, ProducerID: m.cur.ProducerID, ProducerEpoch: m.cur.ProducerEpoch,
		Commit: m.cur.State == PrepareCommit, CoordinatorEpoch: sh.epoch, Partitions: slices.Clone(m.cur.Partitions),
	}
	c.wg.Add(1)
	go c.complete(sh, m, mk)
}

// complete writes mk and then the Complete state of m's transaction,
// retrying both until done or sh's leadership ends (Kafka's
// TransactionMarkerChannelManager and writeTxnCompletion).
func (c *Coordinator) complete(sh *shard, m *txnMeta, mk Markers) {
	defer c.wg.Done()
	log := c.opts.Logger.With("transactional_id", mk.TransactionalID, "producer_id", mk.ProducerID, "producer_epoch", mk.ProducerEpoch, "commit", mk.Commit)
	if err := c.sendMarkers(sh.ctx, mk, log); err != nil {
		if !errors.Is(err, context.Canceled) {
			log.Warn("txn: stopped writing markers", "err", err)
		}
		return
	}
	backoff := c.opts.MarkerRetryBackoff
	for {
		c.mu.Lock()
		want := PrepareAbort
		if mk.Commit {
			want = PrepareCommit
		}
		if c.shards[sh.index] != sh || m.cur.State != want || m.cur.ProducerEpoch != mk.ProducerEpoch {
			// Lost the partition, or (never expected) changed meanwhile.
			c.mu.Unlock()
			return
		}
		if m.pending != nil {
			// No request changes a prepared transaction; wait anyway.
			c.mu.Unlock()
			if !sleep(sh.ctx, backoff) {
				return
			}
			continue
		}
		t := m.transit()
		t.v.State, t.v.Partitions, t.v.LastUpdateMs = CompleteAbort, nil, c.nowMs()
		if mk.Commit {
			t.v.State = CompleteCommit
		}
		m.pending = t
		c.mu.Unlock()
		err := c.write(sh.ctx, sh, m, t)
		if err == nil {
			if f := c.opts.OnComplete; f != nil {
				f(mk.Commit)
			}
			return
		}
		if errors.Is(err, ErrNotCoordinator) || sh.ctx.Err() != nil {
			log.Info("txn: left the transaction to the next coordinator", "err", err)
			return
		}
		log.Warn("txn: write the completed state; retrying", "err", err)
		if !sleep(sh.ctx, backoff) {
			return
		}
		backoff = min(2*backoff, maxMarkerRetryBackoff)
	}
}

// sendMarkers writes mk through the MarkerWriter, again for the partitions
// that failed, until none is left. Errors: one wrapping ErrMarkerFenced,
// or ctx's.
func (c *Coordinator) sendMarkers(ctx context.Context, mk Markers, log interface {
	Warn(string, ...any)
}) error {
	backoff := c.opts.MarkerRetryBackoff
	for attempt := 0; ; attempt++ {
		failed := c.opts.Markers.WriteMarkers(ctx, mk)
		var retry []TopicPartition
		for _, tp := range mk.Partitions {
			err := failed[tp]
			switch {
			case err == nil:
			case errors.Is(err, ErrMarkerFenced):
				return err
			default:
				retry = append(retry, tp)
				if attempt%10 == 0 {
					log.Warn("txn: write marker; retrying", "topic", tp.Topic, "partition", tp.Partition, "attempt", attempt, "err", err)
				}
			}
		}
		if len(retry) == 0 {
			return nil
		}
		mk.Partitions = retry
		if !sleep(ctx, backoff) {
			return ctx.Err()
		}
		backoff = min(2*backoff, maxMarkerRetryBackoff)
	}
}

// sleep waits d; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
