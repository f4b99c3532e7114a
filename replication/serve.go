package replication

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluice/sluice/zerocopy"
)

// The leader's side of replication: what the Fetch and OffsetForLeaderEpoch
// handlers call for a follower's request. The server turns errors into
// Kafka codes: ErrNotLeader NOT_LEADER_OR_FOLLOWER, ErrFencedLeaderEpoch
// FENCED_LEADER_EPOCH, ErrUnknownLeaderEpoch UNKNOWN_LEADER_EPOCH,
// engine.ErrOffsetOutOfRange OFFSET_OUT_OF_RANGE.

// CheckLeaderEpoch fences a request by its current leader epoch (KIP-320):
// -1 skips the check; an older epoch is ErrFencedLeaderEpoch, a newer one
// ErrUnknownLeaderEpoch. With requireLeader, a replica that does not lead
// answers ErrNotLeader.
func (p *Partition) CheckLeaderEpoch(current int32, requireLeader bool) error {
	le := p.leaderEpoch.Load()
	switch {
	case current >= 0 && current < le:
		return fmt.Errorf("%w: %s-%d request epoch %d, partition epoch %d", ErrFencedLeaderEpoch, p.opts.Topic, p.index, current, le)
	case current > le:
		return fmt.Errorf("%w: %s-%d request epoch %d, partition epoch %d", ErrUnknownLeaderEpoch, p.opts.Topic, p.index, current, le)
	case requireLeader && !p.isLeader.Load():
		return ErrNotLeader
	}
	return nil
}

// ReplicaFetchResult is the leader's answer for one partition of a
// follower's Fetch.
type ReplicaFetchResult struct {
	// Records are whole batches from the fetch offset up to the log end
	// (at least one batch when there is one, KIP-74); empty when the
	// follower is caught up. The caller must Release it.
	Records       zerocopy.Slice
	HighWatermark int64
	// LogStartOffset is the log start offset (Partition.LogStart: below
	// the local log start on a tiered partition), which the follower
	// raises its own to.
	LogStartOffset int64
	LogEndOffset   int64
}

// HandleReplicaFetch serves one partition of a Fetch from follower
// replicaID: it checks leadership and currentLeaderEpoch
// (CheckLeaderEpoch), that replicaID is one of the partition's other
// replicas (else ErrUnknownLeaderEpoch when a current leader epoch was
// given, ErrNotLeader when not, as Kafka answers), records the follower's
// state (UpdateFollowerState, which does that check and may change the
// ISR and the HW) and reads from fetchOffset, bounded
// by the log end, not the HW. An offset outside [log start, log end] is an
// error wrapping engine.ErrOffsetOutOfRange; the result still carries the
// log start and HW, which the response reports so the follower can restart
// at the log start. It does not wait: with nothing to read, the server
// parks the request (as for consumers) until Changed fires or the wait
// ends, and asks again.
func (p *Partition) HandleReplicaFetch(replicaID, currentLeaderEpoch int32, fetchOffset int64, maxBytes int, now time.Time) (ReplicaFetchResult, error) {
	res := ReplicaFetchResult{HighWatermark: -1, LogStartOffset: -1, LogEndOffset: -1}
	if err := p.CheckLeaderEpoch(currentLeaderEpoch, true); err != nil {
		return res, err
	}
	hw, err := p.UpdateFollowerState(replicaID, fetchOffset, now)
	switch {
	case errors.Is(err, errNotReplica):
		// Kafka's followerReplicaOrThrow: the follower retries, and a
		// stranger learns nothing past the high watermark.
		if currentLeaderEpoch >= 0 {
			return res, fmt.Errorf("%w: %s-%d: broker %d is not a replica", ErrUnknownLeaderEpoch, p.opts.Topic, p.index, replicaID)
		}
		return res, fmt.Errorf("%w: %s-%d: broker %d is not a replica", ErrNotLeader, p.opts.Topic, p.index, replicaID)
	case err != nil: // the offset is out of range
		res.LogStartOffset, res.LogEndOffset, res.HighWatermark = p.LogStart(), p.log.EndOffset(), hw
		return res, err
	}
	res.LogStartOffset, res.LogEndOffset, res.HighWatermark = p.LogStart(), p.log.EndOffset(), hw
	sl, err := p.log.Read(fetchOffset, maxBytes, -1)
	if err != nil {
		return res, err
	}
	res.Records = sl
	res.LogStartOffset, res.LogEndOffset = p.LogStart(), p.log.EndOffset()
	if p.LogStartUnknown() {
		// Lost with a damaged checkpoint and not settled yet by the
		// remote log manager: LogStart is only the local start, which
		// followers must not raise theirs to (it may lie above records
		// the remote tier holds). An out-of-range answer above keeps it,
		// for a follower to restart at.
		res.LogStartOffset = -1
	}
	return res, nil
}

// InISR reports whether replicaID is in the committed in-sync replica set
// (a leader's replication throttle never holds back an in-sync follower,
// as Kafka's shouldLeaderThrottle).
func (p *Partition) InISR(replicaID int32) bool {
	p.rmu.Lock()
	defer p.rmu.Unlock()
	return slices.Contains(p.rs.isr, replicaID)
}

// HandleOffsetForLeaderEpoch answers one partition of an
// OffsetForLeaderEpoch request from a follower or a consumer: fencing by
// currentLeaderEpoch (only the leader answers), then EndOffsetForEpoch.
func (p *Partition) HandleOffsetForLeaderEpoch(currentLeaderEpoch, epoch int32) (int32, int64, error) {
	if err := p.CheckLeaderEpoch(currentLeaderEpoch, true); err != nil {
		return -1, -1, err
	}
	e, end := p.EndOffsetForEpoch(epoch)
	return e, end, nil
}
