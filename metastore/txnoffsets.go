package metastore

import (
	"encoding/binary"
	"fmt"
)

// Pending transactional offsets (TxnOffsetCommit, KIP-98/KIP-447)
//
// An offset committed inside a transaction is pending until the transaction
// ends: it is kept per (group, producer id, partition), apart from the
// committed offsets, so a restart restores it as pending, and becomes a
// committed offset (or is dropped) when the transaction's marker arrives.
// The key and value layouts are drawn in format.go (kind 0x08).

// PendingTxnOffset is one offset committed in a transaction that has not
// ended yet.
type PendingTxnOffset struct {
	ProducerID    int64
	ProducerEpoch int16
	TopicPartition
	Offset CommittedOffset
	// Position orders the group's offset writes: the log offset of the
	// record in __consumer_offsets (a data dir from the release that kept a
	// single node's groups in the metastore alone holds a counter of the
	// group coordinator instead). Only comparisons between positions
	// of one group are meaningful.
	Position int64
	// Superseded is set when an offset of the same partition written after
	// this one (a plain OffsetCommit, or another transaction's committed
	// offset) was applied: a commit of this transaction then leaves the
	// committed offset alone (Kafka's CommitRecordMetadataAndOffset.olderThan).
	Superseded bool
}

// PendingKey names one pending transactional offset of a group.
type PendingKey struct {
	ProducerID int64
	TopicPartition
}

// OffsetsUpdate is one atomic change to a group's offsets: see UpdateOffsets.
type OffsetsUpdate struct {
	Commit        map[TopicPartition]CommittedOffset // new committed offsets
	DeleteCommit  []TopicPartition                   // committed offsets removed
	PutPending    []PendingTxnOffset                 // pending offsets written (replacing same keys)
	DeletePending []PendingKey                       // pending offsets removed
	// Epochs are producer epoch records written (see PutProducerEpoch),
	// producer id -> epoch, so an epoch is stored with the pending offsets
	// that raised it.
	Epochs map[int64]int16
}

func (u *OffsetsUpdate) empty() bool {
	return len(u.Commit) == 0 && len(u.DeleteCommit) == 0 && len(u.PutPending) == 0 && len(u.DeletePending) == 0 && len(u.Epochs) == 0
}

// UpdateOffsets applies u to group's offsets in one atomic batch, synced
// before it returns: after a crash either all of it is visible or none.
// Deletions run before writes, so a key both deleted and written ends up
// written. An empty update is a no-op.
func (s *Store) UpdateOffsets(group string, u OffsetsUpdate) error {
	if u.empty() {
		return nil
	}
	db, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.mu.RUnlock()
	b := db.NewBatch()
	defer b.Close()
	var key, val []byte
	for _, tp := range u.DeleteCommit {
		key = offsetKey(key[:0], group, tp)
		if err := b.Delete(key, nil); err != nil {
			return fmt.Errorf("metastore: update offsets of group %q: %w", group, err)
		}
	}
	for _, k := range u.DeletePending {
		key = pendingKey(key[:0], group, k)
		if err := b.Delete(key, nil); err != nil {
			return fmt.Errorf("metastore: update offsets of group %q: %w", group, err)
		}
	}
	for tp, o := range u.Commit {
		key = offsetKey(key[:0], group, tp)
		val = appendOffset(val[:0], o)
		if err := b.Set(key, val, nil); err != nil {
			return fmt.Errorf("metastore: update offsets of group %q: %w", group, err)
		}
	}
	for _, p := range u.PutPending {
		if p.ProducerID < 0 {
			return fmt.Errorf("%w: pending offset of group %q with producer id %d", ErrInvalid, group, p.ProducerID)
		}
		key = pendingKey(key[:0], group, PendingKey{ProducerID: p.ProducerID, TopicPartition: p.TopicPartition})
		val = appendPending(val[:0], p)
		if err := b.Set(key, val, nil); err != nil {
			return fmt.Errorf("metastore: update offsets of group %q: %w", group, err)
		}
	}
	for pid, e := range u.Epochs {
		if pid < 0 {
			return fmt.Errorf("%w: producer epoch record with producer id %d", ErrInvalid, pid)
		}
		if err := b.Set(txnEpochKey(pid), appendTxnEpoch(nil, e), nil); err != nil {
			return fmt.Errorf("metastore: update offsets of group %q: %w", group, err)
		}
	}
	if err := b.Commit(syncWrite); err != nil {
		return fmt.Errorf("metastore: update offsets of group %q: %w", group, err)
	}
	return nil
}

// FetchPendingTxnOffsets returns every pending transactional offset of
// group in key order (producer id, topic, partition); nil when it has none.
// A damaged record fails the call with an error wrapping ErrCorrupt.
func (s *Store) FetchPendingTxnOffsets(group string) ([]PendingTxnOffset, error) {
	prefix := pendingGroupPrefix(nil, group)
	var out []PendingTxnOffset
	err := s.scan(prefix, prefixEnd(prefix), func(k, v []byte) error {
		pk, err := decodePendingKey(k, len(prefix))
		if err != nil {
			return err
		}
		p, err := decodePending(k, v)
		if err != nil {
			return err
		}
		p.ProducerID, p.TopicPartition = pk.ProducerID, pk.TopicPartition
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ListPendingTxnGroups returns the names of the groups that have at least
// one pending transactional offset, sorted.
func (s *Store) ListPendingTxnGroups() ([]string, error) {
	return s.listNames(kindPendingTxn, "pending offset")
}

// pendingGroupPrefix is 0x08 esc(group): the prefix of group's pending
// transactional offsets.
func pendingGroupPrefix(dst []byte, group string) []byte {
	return appendName(append(dst, kindPendingTxn), group)
}

func pendingKey(dst []byte, group string, k PendingKey) []byte {
	dst = pendingGroupPrefix(dst, group)
	dst = binary.BigEndian.AppendUint64(dst, uint64(k.ProducerID))
	dst = appendName(dst, k.Topic)
	return binary.BigEndian.AppendUint32(dst, uint32(k.Partition))
}

// decodePendingKey decodes the producer id and partition of a pending key
// whose group prefix is plen bytes long.
func decodePendingKey(key []byte, plen int) (PendingKey, error) {
	b := key[plen:]
	if len(b) < 8 {
		return PendingKey{}, corruptf(key, "pending offset key too short")
	}
	pid := int64(binary.BigEndian.Uint64(b))
	tp, err := decodeOffsetTP(key, plen+8, "")
	if err != nil {
		return PendingKey{}, err
	}
	return PendingKey{ProducerID: pid, TopicPartition: tp}, nil
}

// appendPending appends the version-1 encoding of p's value (format.go).
func appendPending(dst []byte, p PendingTxnOffset) []byte {
	dst = append(dst, pendingV1)
	dst = binary.BigEndian.AppendUint16(dst, uint16(p.ProducerEpoch))
	dst = binary.BigEndian.AppendUint64(dst, uint64(p.Position))
	var flags byte
	if p.Superseded {
		flags |= pendingSuperseded
	}
	dst = append(dst, flags)
	return appendOffset(dst, p.Offset)
}

// decodePending decodes a value written by appendPending (the key's fields
// are left zero).
func decodePending(key, v []byte) (PendingTxnOffset, error) {
	if len(v) < pendingFixedLen {
		return PendingTxnOffset{}, corruptf(key, "pending offset value is %d bytes, want at least %d", len(v), pendingFixedLen)
	}
	if v[0] != pendingV1 {
		return PendingTxnOffset{}, corruptf(key, "unknown pending offset value version %d", v[0])
	}
	if v[11]&^pendingSuperseded != 0 {
		return PendingTxnOffset{}, corruptf(key, "unknown pending offset flags %#x", v[11])
	}
	o, err := decodeOffset(key, v[pendingFixedLen:])
	if err != nil {
		return PendingTxnOffset{}, err
	}
	return PendingTxnOffset{
		ProducerEpoch: int16(binary.BigEndian.Uint16(v[1:3])),
		Position:      int64(binary.BigEndian.Uint64(v[3:11])),
		Superseded:    v[11]&pendingSuperseded != 0,
		Offset:        o,
	}, nil
}

// Producer epochs (kind 0x09, one record per producer id)
//
// The release that kept a single node's groups in the metastore alone had
// no __consumer_offsets log whose producer state would refuse a zombie's
// TxnOffsetCommit, so its group coordinator stored the latest epoch of each
// producer id here. Today's fences through the log and writes none; the
// records of an upgraded data dir are left alone (the format keeps the
// kind).

// PutProducerEpoch stores epoch as the latest epoch of producerID, synced.
func (s *Store) PutProducerEpoch(producerID int64, epoch int16) error {
	if producerID < 0 {
		return fmt.Errorf("%w: producer epoch record with producer id %d", ErrInvalid, producerID)
	}
	return s.set(txnEpochKey(producerID), appendTxnEpoch(nil, epoch))
}

// DeleteProducerEpochs removes the epoch records of producerIDs in one
// synced batch; absent ones are ignored.
func (s *Store) DeleteProducerEpochs(producerIDs []int64) error {
	if len(producerIDs) == 0 {
		return nil
	}
	db, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.mu.RUnlock()
	b := db.NewBatch()
	defer b.Close()
	for _, pid := range producerIDs {
		if err := b.Delete(txnEpochKey(pid), nil); err != nil {
			return fmt.Errorf("metastore: delete producer epochs: %w", err)
		}
	}
	if err := b.Commit(syncWrite); err != nil {
		return fmt.Errorf("metastore: delete producer epochs: %w", err)
	}
	return nil
}

// ProducerEpochs returns every stored producer epoch, producer id ->
// epoch. A damaged record fails the call with an error wrapping ErrCorrupt.
func (s *Store) ProducerEpochs() (map[int64]int16, error) {
	out := make(map[int64]int16)
	err := s.scan([]byte{kindTxnEpoch}, []byte{kindTxnEpoch + 1}, func(k, v []byte) error {
		pid, epoch, err := decodeTxnEpoch(k, v)
		if err == nil {
			out[pid] = epoch
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// decodeTxnEpoch decodes one producer epoch record.
func decodeTxnEpoch(k, v []byte) (producerID int64, epoch int16, err error) {
	if len(k) != 9 || k[0] != kindTxnEpoch {
		return 0, 0, corruptf(k, "producer epoch key is %d bytes, want 9", len(k))
	}
	if len(v) != 3 || v[0] != txnEpochV1 {
		return 0, 0, corruptf(k, "bad producer epoch value %x", v)
	}
	return int64(binary.BigEndian.Uint64(k[1:])), int16(binary.BigEndian.Uint16(v[1:])), nil
}

func txnEpochKey(producerID int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{kindTxnEpoch}, uint64(producerID))
}

func appendTxnEpoch(dst []byte, epoch int16) []byte {
	return binary.BigEndian.AppendUint16(append(dst, txnEpochV1), uint16(epoch))
}
