package offsets

// Transactional offset commits in __consumer_offsets, as Kafka's
// GroupMetadataManager writes and loads them.
//
// Write (PersistTxn): the offset records of one TxnOffsetCommit form one
// transactional batch (attribute bit 0x10) carrying the producer's id and
// epoch, appended with acks=all to the group's partition. Kafka appends it
// with the coordinator's origin, which skips the sequence checks; our log
// checks every idempotent batch, so the batch carries the next sequence of
// that producer in the partition (seqs, learned by the load's replay and
// advanced by each local append; this broker is the only writer of
// producer batches to a partition it leads).
//
// Load: a transactional offset record is pending for its producer until a
// control batch of that producer ends the transaction in the partition:
// COMMIT applies each pending offset whose record lies after the current
// one of its key in the log (Kafka's olderThan), ABORT drops them. What is
// still pending at the end of the replay goes to the metastore as pending
// (Superseded when a later record of its key was applied), and from there
// to the group coordinator (group.Coordinator.Reload).
//
// Control batch (a marker, written by the log side): attributes
// transactional|control, one record whose key is
//
//	+-----------------+--------------+
//	| int16 version 0 | int16 type   |   type: 0 ABORT, 1 COMMIT
//	+-----------------+--------------+
//
// and whose value is {int16 version 0, int32 coordinatorEpoch}. Part of the
// log format (Kafka's EndTransactionMarker): do not change.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/sluice/sluice/coordlog"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/replication"
)

// Control record types (the key's type field). Part of the log format.
const (
	controlAbort  int16 = 0
	controlCommit int16 = 1
)

// appendControlBatch appends a COMMIT (commit) or ABORT marker of producer
// pid at epoch, as the log side writes it: for tests and tools.
func appendControlBatch(dst []byte, pid int64, epoch int16, commit bool, coordinatorEpoch int32) []byte {
	typ := controlAbort
	if commit {
		typ = controlCommit
	}
	key := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, 0), uint16(typ))
	val := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(nil, 0), uint32(coordinatorEpoch))
	return record.AppendBatch(dst, record.BatchOptions{
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: -1,
		Attributes: record.TransactionalBit | record.ControlBit,
	}, []record.BuildRecord{{Key: key, Value: val}})
}

// parseControlKey returns the marker type of a control record's key.
// Errors wrap ErrBadRecord.
func parseControlKey(key []byte) (int16, error) {
	if len(key) < 4 {
		return 0, fmt.Errorf("%w: control record key of %d bytes", ErrBadRecord, len(key))
	}
	if v := int16(binary.BigEndian.Uint16(key)); v != 0 {
		return 0, fmt.Errorf("%w: control record key version %d", ErrBadRecord, v)
	}
	return int16(binary.BigEndian.Uint16(key[2:])), nil
}

// seqState is what the partition's producer state expects next from one
// producer: its epoch and next base sequence.
type seqState struct {
	epoch int16
	next  int32
}

// seqTable is the per-partition sequence state of producer batches.
type seqTable struct {
	mu    sync.Mutex
	parts map[int32]map[int64]seqState
}

// reset installs the state a replay of partition i learned.
func (t *seqTable) reset(i int32, m map[int64]seqState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.parts == nil {
		t.parts = map[int32]map[int64]seqState{}
	}
	t.parts[i] = m
}

// learn records batch b (a producer batch read from, or appended to,
// partition i's log) in m.
func learn(m map[int64]seqState, b record.Batch) {
	pid := b.ProducerID()
	if pid < 0 || b.Control() || b.BaseSequence() < 0 {
		return
	}
	if cur, ok := m[pid]; ok && b.ProducerEpoch() < cur.epoch {
		return
	}
	last := b.LastSequence()
	next := last + 1
	if last == math.MaxInt32 {
		next = 0
	}
	m[pid] = seqState{epoch: b.ProducerEpoch(), next: next}
}

// PersistTxn is group.Options.PersistTxn: the offsets of one
// TxnOffsetCommit of group name as one transactional batch of producer pid
// at epoch, appended with acks=all to the group's partition. It returns the
// batch's base offset once committed. Errors as Persist; a producer epoch
// older than the partition knows wraps replication.ErrInvalidProducerEpoch.
func (c *Coordinator) PersistTxn(ctx context.Context, name string, pid int64, epoch int16, offsets map[metastore.TopicPartition]metastore.CommittedOffset) (int64, error) {
	if err := checkOffsets(name, offsets, nil); err != nil {
		return 0, err
	}
	p, err := c.leaderFor(name)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, commitTimeout)
	defer cancel()
	// The sequence is taken and the batch appended locally under the
	// table's lock, so two commits of one producer cannot swap sequences;
	// the wait for the in-sync replicas runs after it.
	c.seqs.mu.Lock()
	m := c.seqs.parts[p.Index()]
	if m == nil {
		m = map[int64]seqState{}
		if c.seqs.parts == nil {
			c.seqs.parts = map[int32]map[int64]seqState{}
		}
		c.seqs.parts[p.Index()] = m
	}
	seq := int32(0)
	if st, ok := m[pid]; ok && st.epoch == epoch {
		seq = st.next
	}
	batch := record.AppendBatch(nil, record.BatchOptions{
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq,
		Attributes: record.TransactionalBit,
	}, c.offsetRecords(name, offsets, nil))
	res, err := p.Append(ctx, batch, 1)
	if err == nil {
		learn(m, record.Batch(batch))
	}
	c.seqs.mu.Unlock()
	if err != nil {
		if errors.Is(err, replication.ErrNotLeader) || errors.Is(err, replication.ErrClosed) {
			return 0, fmt.Errorf("%w: %s-%d: %v", coordlog.ErrNotCoordinator, p.Topic(), p.Index(), err)
		}
		return 0, fmt.Errorf("offsets: append transactional offsets to %s-%d: %w", p.Topic(), p.Index(), err)
	}
	// Decided by the partition (replication.WaitCommitted), not by
	// polling the HW: a follower's HW passing these offsets after a
	// leader change and truncation must not count as their commit.
	if err := p.WaitCommitted(ctx, res); err != nil {
		if errors.Is(err, replication.ErrNotLeader) || errors.Is(err, replication.ErrClosed) {
			return 0, fmt.Errorf("%w: %s-%d: leadership lost before commit", coordlog.ErrNotCoordinator, p.Topic(), p.Index())
		}
		return 0, fmt.Errorf("offsets: wait for %s-%d to commit: %w", p.Topic(), p.Index(), err)
	}
	return res.BaseOffset, nil
}
