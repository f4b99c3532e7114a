package replication

import (
	"fmt"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

// Follower operations. A fetcher (fetcher.go) drives them on a replica
// that MakeFollower made a follower: truncate to where the leader's log and
// this one agree (TruncateTo, decided with OffsetForLeaderEpoch), then
// append what the leader sends (AppendAsFollower) and follow its high
// watermark (UpdateFollowerHW). Each fails with ErrNotFollower on a replica
// that leads (MakeLeader waits for one in progress, so none runs after it).

// AppendAsFollower appends batches fetched from the leader: whole
// RecordBatch v2 batches back to back, which keep the leader's offsets and
// leader epochs and must start at this log's end offset
// (engine.ErrOffsetMismatch otherwise). The producer state learns them, so
// idempotence holds if this replica becomes leader. batches may be
// rewritten in place and is not retained.
func (p *Partition) AppendAsFollower(batches []byte) error {
	p.fmu.Lock()
	defer p.fmu.Unlock()
	if err := p.checkFollower(); err != nil {
		return err
	}
	if len(batches) == 0 {
		return nil
	}
	if _, err := p.log.Append(batches, engine.AppendOptions{AssignOffsets: false}); err != nil {
		p.lowerHW(p.log.EndOffset()) // what reached the log is unknown: reset the byte marks
		return fmt.Errorf("replication: follower append to %s-%d at %d: %w", p.opts.Topic, p.index, p.log.EndOffset(), err)
	}
	nowMs := p.opts.Now().UnixMilli() // one clock read and one sweep per append
	ps := p.producerTable()
	ps.expire(nowMs)
	for pos := 0; pos < len(batches); {
		b := record.Batch(batches[pos:])
		ps.load(b, nowMs)
		pos += b.Size()
	}
	if evs := ps.events; len(evs) > 0 {
		err := p.applyTxnEvents(evs, true)
		ps.events = evs[:0]
		if err != nil {
			return fmt.Errorf("replication: follower append to %s-%d: %w", p.opts.Topic, p.index, err)
		}
	}
	p.noteAppended(int64(len(batches)))
	p.maybeSnapshot(false)
	if p.opts.FlushEveryAppend {
		if err := p.log.Flush(); err != nil {
			p.lowerHW(p.log.EndOffset()) // the batches are in the log, unpriced
			return fmt.Errorf("replication: follower flush of %s-%d: %w", p.opts.Topic, p.index, err)
		}
	}
	p.appends.Add(1)
	p.appended(p.log.EndOffset(), int64(len(batches)))
	p.wakeChanged()
	if f := p.opts.OnFollowerAppend; f != nil {
		f(int64(len(batches)))
	}
	return nil
}

// UpdateFollowerHW sets a follower's high watermark from the leader's:
// min(leaderHW, own log end offset). It only moves forward (truncation
// lowers it).
func (p *Partition) UpdateFollowerHW(leaderHW int64) {
	if p.isLeader.Load() {
		return
	}
	p.advanceHW(min(leaderHW, p.log.EndOffset()))
}

// TruncateTo removes every record at or above offset from a follower's log,
// the leader epoch history with it, and lowers the high watermark to the
// new log end if it was above. An offset inside a batch truncates that
// whole batch (as Kafka does); an offset at or above the log end changes
// nothing; an offset at or below the log start empties the log and
// restarts it at offset. The producer state is rebuilt from the log.
func (p *Partition) TruncateTo(offset int64) error {
	p.fmu.Lock()
	defer p.fmu.Unlock()
	if err := p.checkFollower(); err != nil {
		return err
	}
	end := p.log.EndOffset()
	if offset >= end {
		return nil
	}
	var err error
	if offset > p.log.StartOffset() {
		// Inside a batch: cut from the start of that batch (backends
		// refuse offsets off a batch boundary).
		offset, err = p.batchBase(offset)
	}
	if err == nil {
		err = p.log.Truncate(offset)
	}
	if err != nil {
		return fmt.Errorf("replication: truncate %s-%d to %d: %w", p.opts.Topic, p.index, offset, err)
	}
	p.afterTruncate(end)
	return nil
}

// RestartAt empties a follower's log and restarts it at offset (Kafka's
// truncateFullyAndStartAt): the follower fell behind the leader's log start
// and fetches from there. Offsets above the log start need a backend that
// implements engine.FullTruncater; others return an error
// wrapping engine.ErrOffsetOutOfRange.
func (p *Partition) RestartAt(offset int64) error {
	p.fmu.Lock()
	defer p.fmu.Unlock()
	if err := p.checkFollower(); err != nil {
		return err
	}
	end := p.log.EndOffset()
	var err error
	switch sa, ok := p.log.(engine.FullTruncater); {
	case offset <= p.log.StartOffset():
		err = p.log.Truncate(offset)
	case ok:
		err = sa.TruncateFullyAndStartAt(offset)
	default:
		err = fmt.Errorf("%w: the %T log cannot restart above its start offset %d", engine.ErrOffsetOutOfRange, p.log, p.log.StartOffset())
	}
	if err != nil {
		return fmt.Errorf("replication: restart %s-%d at %d: %w", p.opts.Topic, p.index, offset, err)
	}
	p.afterTruncate(end)
	p.opts.Logger.Warn("replication: follower log restarted", "topic", p.opts.Topic, "partition", p.index, "offset", offset, "old_end", end)
	return nil
}

// afterTruncate fixes what depends on the log's tail.
// REQUIRES: p.fmu held, follower.
func (p *Partition) afterTruncate(oldEnd int64) {
	end := p.log.EndOffset()
	p.lowerHW(end)
	p.rebuildProducerState("truncation")
	if end != oldEnd {
		p.opts.Logger.Info("replication: follower truncated", "topic", p.opts.Topic, "partition", p.index, "from", oldEnd, "to", end)
	}
}

// batchBase returns the base offset of the batch holding offset.
func (p *Partition) batchBase(offset int64) (int64, error) {
	sl, err := p.log.Read(offset, 1, -1)
	if err != nil {
		return -1, err
	}
	defer sl.Release()
	var hdr [record.HeaderSize]byte
	if n, err := sl.ReadAt(hdr[:], 0); n < len(hdr) {
		return -1, fmt.Errorf("reading the batch at %d: %w", offset, err)
	}
	return record.Batch(hdr[:]).BaseOffset(), nil
}

// checkFollower: follower operations run only on a settled follower.
func (p *Partition) checkFollower() error {
	if p.isClosed() {
		return ErrClosed
	}
	p.rmu.Lock()
	ok := p.rs.follower && !p.rs.leader
	p.rmu.Unlock()
	if !ok {
		return ErrNotFollower
	}
	return nil
}

// LatestEpoch returns the newest leader epoch in the log's history, or -1
// when it has none.
func (p *Partition) LatestEpoch() int32 {
	e := p.log.LeaderEpochs()
	if len(e) == 0 {
		return -1
	}
	return e[len(e)-1].Epoch
}

// localEndOffsetForEpoch is EndOffsetForEpoch over the log's own history
// only (what a follower compares with the leader's answer).
func (p *Partition) localEndOffsetForEpoch(epoch int32) (int32, int64) {
	return engine.EndOffsetForEpoch(p.log.LeaderEpochs(), epoch, p.log.EndOffset())
}
