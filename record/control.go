package record

import (
	"encoding/binary"
	"fmt"
)

// Control batches (transaction markers)
//
// A transaction ends in each partition it wrote with one control batch
// (attributes transactional|control), written by the partition leader on the
// coordinator's request (WriteTxnMarkers): the producer's id and epoch, base
// sequence -1, and one record whose key and value are (Kafka's
// ControlRecordType and EndTransactionMarker; part of the wire and on-disk
// format: do not change):
//
//	key:   +---------------+------------+
//	       | version int16 | type int16 |   version 0; type 0 ABORT, 1 COMMIT
//	       +---------------+------------+
//	value: +---------------+------------------------+
//	       | version int16 | coordinatorEpoch int32 |   version 0
//	       +---------------+------------------------+
//
// All integers big-endian. Readers accept a key or value longer than these
// fields (a later version may append fields), as Kafka's readers do.

// ControlType is a control record's type (Kafka's ControlRecordType).
type ControlType int16

// Control record types; part of the format: do not change.
const (
	ControlAbort  ControlType = 0
	ControlCommit ControlType = 1
)

func (t ControlType) String() string {
	switch t {
	case ControlAbort:
		return "ABORT"
	case ControlCommit:
		return "COMMIT"
	}
	return fmt.Sprintf("UNKNOWN(%d)", int16(t))
}

// EndTxnMarker is the content of a transaction marker's control record.
type EndTxnMarker struct {
	Type             ControlType
	CoordinatorEpoch int32
}

// MarkerOptions are the header fields of a marker batch.
type MarkerOptions struct {
	BaseOffset    int64 // the broker assigns it on append
	LeaderEpoch   int32
	ProducerID    int64
	ProducerEpoch int16
	Timestamp     int64 // ms; the record's and the batch's timestamp
}

// AppendEndTxnMarker appends a control batch holding one EndTxnMarker
// record to dst, as a partition leader writes it for WriteTxnMarkers.
func AppendEndTxnMarker(dst []byte, opts MarkerOptions, m EndTxnMarker) []byte {
	key := binary.BigEndian.AppendUint16(make([]byte, 0, 4), 0)
	key = binary.BigEndian.AppendUint16(key, uint16(m.Type))
	val := binary.BigEndian.AppendUint16(make([]byte, 0, 6), 0)
	val = binary.BigEndian.AppendUint32(val, uint32(m.CoordinatorEpoch))
	return AppendBatch(dst, BatchOptions{
		BaseOffset: opts.BaseOffset, LeaderEpoch: opts.LeaderEpoch,
		ProducerID: opts.ProducerID, ProducerEpoch: opts.ProducerEpoch,
		BaseSequence: NoSequence, Attributes: TransactionalBit | ControlBit,
	}, []BuildRecord{{Key: key, Value: val, Timestamp: opts.Timestamp}})
}

// ParseControlKey reads a control record's key: its type. Errors wrap
// ErrInvalid (too short, or a version other than 0).
func ParseControlKey(key []byte) (ControlType, error) {
	if len(key) < 4 {
		return 0, fmt.Errorf("%w: control record key of %d bytes, want 4", ErrInvalid, len(key))
	}
	if v := int16(binary.BigEndian.Uint16(key)); v != 0 {
		return 0, fmt.Errorf("%w: control record key version %d", ErrInvalid, v)
	}
	return ControlType(binary.BigEndian.Uint16(key[2:])), nil
}

// ParseEndTxnMarker reads the marker of a control record (its key and
// value). Errors wrap ErrInvalid: a short key or value, an unknown version,
// or a type that is neither ABORT nor COMMIT.
func ParseEndTxnMarker(key, value []byte) (EndTxnMarker, error) {
	t, err := ParseControlKey(key)
	if err != nil {
		return EndTxnMarker{}, err
	}
	if t != ControlAbort && t != ControlCommit {
		return EndTxnMarker{}, fmt.Errorf("%w: control record type %d is not a transaction marker", ErrInvalid, t)
	}
	if len(value) < 6 {
		return EndTxnMarker{}, fmt.Errorf("%w: end transaction marker value of %d bytes, want 6", ErrInvalid, len(value))
	}
	if v := int16(binary.BigEndian.Uint16(value)); v != 0 {
		return EndTxnMarker{}, fmt.Errorf("%w: end transaction marker version %d", ErrInvalid, v)
	}
	return EndTxnMarker{Type: t, CoordinatorEpoch: int32(binary.BigEndian.Uint32(value[2:]))}, nil
}

// BatchEndTxnMarker reads the marker of control batch b (validated, as by
// Validate). ok is false when b is not a control batch or holds no record
// (Kafka's cleaner may empty a control batch).
func BatchEndTxnMarker(b Batch) (m EndTxnMarker, ok bool, err error) {
	if !b.Control() {
		return EndTxnMarker{}, false, nil
	}
	var it Iter
	it.Reset(b)
	if !it.Next() {
		return EndTxnMarker{}, false, it.Err()
	}
	r := it.Record()
	m, err = ParseEndTxnMarker(r.Key, r.Value)
	return m, err == nil, err
}
