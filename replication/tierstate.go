package replication

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/engine"
)

// A follower below its leader's local log start on a tiered topic
// (KIP-405; Kafka's ReplicaFetcherTierStateMachine)
//
// The leader answers a follower's fetch below its local log start, but
// not below the remote log start, with OFFSET_MOVED_TO_TIERED_STORAGE.
// The fetcher then marks the partition (fetchPart.tiered) and, in its next
// tierRound (never while a fetch response is being applied, whose buffer
// the request would reuse), asks the leader for its earliest local offset
// (ListOffsets -4), asks RemoteLogAux for the state below it that the
// remote tier keeps (the leader epoch checkpoint and producer snapshot of
// the remote segment ending just below it, found in the remote log
// metadata every broker replays) and restarts its log there
// (Partition.RestartFromRemote): the log is emptied and starts at the
// segment's end + 1, the leader's local start, with the epoch history and
// the producer state the leader had there. It fetches from there on.
// Kafka also asks the leader for the end offset of the epoch before the
// local start's to choose the epoch it looks the segment up by; Sluice's
// leader cuts its epoch history at its local start, so the lookup goes
// by offset alone (RemoteLogAux). Any failure backs the partition off and
// the round runs again.

// listOffsetsVersion is the ListOffsets version a fetcher sends: v8 is
// the first with -4, the earliest local offset (KIP-405).
const listOffsetsVersion = 8

// listEarliestLocal is ListOffsets' timestamp -4.
const listEarliestLocal = -4

// RemoteLogAux finds what a follower restores from the remote tier
// (FetcherOptions.RemoteLog). Called by fetcher goroutines concurrently.
type RemoteLogAux interface {
	// RemoteAuxState returns the state below the leader's local log start
	// localStart, from the remote segment holding localStart-1. An error
	// (nothing remote there yet, the store down) makes the follower retry
	// later.
	RemoteAuxState(ctx context.Context, topic string, partition int32, localStart int64) (RemoteAuxState, error)
}

// RemoteAuxState is what RestartFromRemote restores.
type RemoteAuxState struct {
	// NextOffset is where the log restarts: the remote segment's end
	// offset + 1 (Kafka's nextOffset).
	NextOffset int64
	// Epochs is the segment's leader-epoch checkpoint: the history as of
	// NextOffset.
	Epochs []engine.EpochEntry
	// ProducerSnapshot is the producer snapshot at NextOffset, in this
	// package's snapshot format (the segment backend's .snapshot file);
	// nil when the segment had none.
	ProducerSnapshot []byte
	// LogStartOffset is the leader's log start offset, below NextOffset on
	// a tiered partition: the rebuilt log keeps it (Kafka's
	// truncateFullyAndStartAt(nextOffset, leaderLogStartOffset)), so that
	// records the leader deleted stay deleted here, also once this
	// replica leads. < 0: none (the log start is NextOffset). The fetcher
	// sets it from the leader's OFFSET_MOVED_TO_TIERED_STORAGE answer.
	LogStartOffset int64
}

// RestartFromRemote empties a follower's log and restarts it at
// aux.NextOffset (engine.FullTruncater) with aux's leader epoch history
// (engine.EpochRestorer, on backends that have it) and producer state
// (saved as the snapshot at NextOffset, which the producer state is then
// loaded from). A snapshot that does not decode is not saved, and the
// state is what the log after NextOffset gives. On an error after the
// log was emptied it is left restarted without what failed; calling it
// again is safe.
func (p *Partition) RestartFromRemote(aux RemoteAuxState) error {
	p.fmu.Lock()
	defer p.fmu.Unlock()
	if err := p.checkFollower(); err != nil {
		return err
	}
	ft, ok := p.log.(engine.FullTruncater)
	if !ok {
		return fmt.Errorf("%w: the %T log cannot restart at %d", engine.ErrOffsetOutOfRange, p.log, aux.NextOffset)
	}
	end := p.log.EndOffset()
	restart := ft.TruncateFullyAndStartAt
	if ls, ok := p.log.(logStarter); ok {
		restart = func(offset int64) error { return ls.TruncateFullyAndStartAtWithLogStart(offset, aux.LogStartOffset) }
	}
	if err := restart(aux.NextOffset); err != nil {
		return fmt.Errorf("replication: restart %s-%d at %d: %w", p.opts.Topic, p.index, aux.NextOffset, err)
	}
	var errs []error
	if er, ok := p.log.(engine.EpochRestorer); ok && len(aux.Epochs) > 0 {
		if err := er.RestoreLeaderEpochs(aux.Epochs); err != nil {
			errs = append(errs, fmt.Errorf("replication: restore leader epochs of %s-%d: %w", p.opts.Topic, p.index, err))
		}
	}
	if ss, ok := p.log.(engine.SnapshotStore); ok && len(aux.ProducerSnapshot) > 0 {
		if _, err := decodeSnapshot(aux.ProducerSnapshot); err != nil {
			p.opts.Logger.Warn("replication: the remote producer snapshot does not decode; not restored", "topic", p.opts.Topic, "partition", p.index, "offset", aux.NextOffset, "err", err)
		} else if err := ss.SaveSnapshot(aux.NextOffset, aux.ProducerSnapshot); err != nil {
			errs = append(errs, fmt.Errorf("replication: restore producer snapshot of %s-%d: %w", p.opts.Topic, p.index, err))
		}
	}
	p.afterTruncate(end)
	p.opts.Logger.Warn("replication: follower log rebuilt from the remote tier", "topic", p.opts.Topic, "partition", p.index, "offset", aux.NextOffset, "log_start_offset", p.LogStart(), "old_end", end, "epochs", len(aux.Epochs), "producer_snapshot", len(aux.ProducerSnapshot) > 0)
	return errors.Join(errs...)
}

// tierRound rebuilds the partitions the leader answered
// OFFSET_MOVED_TO_TIERED_STORAGE (see the top of this file). It reports
// whether it had any.
func (f *fetcher) tierRound() bool {
	var parts []pending
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = listOffsetsVersion
	req.ReplicaID = f.m.opts.BrokerID
	topics := map[string]int{}
	f.mu.Lock()
	for p, st := range f.parts {
		if !st.tiered || time.Now().Before(st.backoffUntil) {
			continue
		}
		if f.m.opts.RemoteLog == nil {
			// Nothing to rebuild from: fall back to realigning by epochs.
			st.tiered, st.truncating = false, true
			f.backoff(st)
			continue
		}
		parts = append(parts, pending{p, st})
		i, ok := topics[p.Topic()]
		if !ok {
			i = len(req.Topics)
			topics[p.Topic()] = i
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = p.Topic()
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = p.Index()
		rp.CurrentLeaderEpoch = st.epoch
		rp.Timestamp = listEarliestLocal
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	f.mu.Unlock()
	if len(parts) == 0 {
		return false
	}
	kresp, err := f.send(req)
	if err != nil {
		if f.ctx.Err() == nil {
			f.m.logger.Warn("replication: ListOffsets for the leader's local log start failed", "leader", f.leader, "err", err)
			f.sleep()
		}
		return true
	}
	resp, ok := kresp.(*kmsg.ListOffsetsResponse)
	if !ok {
		return true
	}
	starts := map[tp]int64{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				f.m.logger.Info("replication: ListOffsets -4 refused; backing off", "topic", rt.Topic, "partition", rp.Partition, "leader", f.leader, "err", err)
				continue
			}
			starts[tp{rt.Topic, rp.Partition}] = rp.Offset
		}
	}
	for _, pd := range parts {
		f.rebuildFromRemote(pd, starts)
	}
	return true
}

// rebuildFromRemote restarts pd from the remote tier below the leader's
// local start (starts, by partition; absent: the leader refused).
func (f *fetcher) rebuildFromRemote(pd pending, starts map[tp]int64) {
	p := pd.p
	localStart, ok := starts[tp{p.Topic(), p.Index()}]
	var aux RemoteAuxState
	var err error
	if ok {
		aux, err = f.m.opts.RemoteLog.RemoteAuxState(f.ctx, p.Topic(), p.Index(), localStart)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.current(pd) {
		return
	}
	switch {
	case !ok:
		f.backoff(pd.st)
		return
	case err != nil:
		f.m.logger.Warn("replication: cannot read the remote tier's state below the leader's local log start", "topic", p.Topic(), "partition", p.Index(), "local_start", localStart, "err", err)
		f.backoff(pd.st)
		return
	}
	aux.LogStartOffset = pd.st.leaderLogStart
	if err := p.RestartFromRemote(aux); err != nil {
		f.m.logger.Warn("replication: rebuilding from the remote tier failed", "topic", p.Topic(), "partition", p.Index(), "offset", aux.NextOffset, "err", err)
		f.backoff(pd.st)
		return
	}
	pd.st.tiered, pd.st.refusals = false, 0
}

// ProducerSnapshotAt returns the producer state of the log below offset
// (the end of a rolled segment the remote log manager copies; Kafka's
// producer snapshot at the next segment's base), in this package's
// snapshot format: the latest valid snapshot at or below offset, or none
// (the log start), with the batches up to offset replayed. Batches that
// end past offset are left out. It reads only what lies below offset,
// which must be below the high watermark (never truncated), so it is
// safe to call while the partition appends.
func (p *Partition) ProducerSnapshotAt(offset int64) ([]byte, error) {
	s := newProducerState(p.opts.ProducerIDExpiration)
	from := p.log.StartOffset()
	if ss, ok := p.log.(engine.SnapshotStore); ok {
		for upTo := offset; upTo >= 0; {
			off, data, ok, err := ss.LatestSnapshot(upTo)
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			entries, err := decodeSnapshot(data)
			if err != nil {
				upTo = off - 1
				continue
			}
			loadSnapshot(s, entries)
			from = max(from, off)
			break
		}
	}
	if err := replayProducersTo(s, p.log, from, offset); err != nil {
		return nil, err
	}
	return encodeSnapshot(s), nil
}
