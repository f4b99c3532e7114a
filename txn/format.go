package txn

// Records of the internal __transaction_state topic, in Kafka's own layout
// (TransactionLogKey.json and TransactionLogValue.json of Kafka's
// transaction-coordinator module), so Kafka's tools could read our logs.
// Integers big-endian; a string is an int16 length then UTF-8 bytes.
//
// Key, version 0 (the only one):
//
//	+---------+---------------------------+
//	| int16 0 | transactional_id string   |
//	+---------+---------------------------+
//
// Value, version 0 (a null value is a tombstone: the transactional id
// expired and is forgotten):
//
//	+---------+-------------------+---------------------+------------------+---------------+
//	| int16 0 | int64 producer_id | int16 producer_epoch| int32 timeout_ms | int8 status   |
//	+---------+-------------------+---------------------+------------------+---------------+
//	| partitions: int32 count (-1: null), then per topic:                                  |
//	|   topic string, int32 count, count x int32 partition                                 |
//	+---------------------------+------------------------+                                 |
//	| int64 last_update_ms      | int64 start_ms         |                                 |
//	+---------------------------+------------------------+---------------------------------+
//
// status is a State (0 Empty ... 7 PrepareEpochFence). The partitions are
// null in Empty, as Kafka writes them. Version 1 (KIP-915, flexible: compact
// strings and arrays, tagged fields PreviousProducerId, NextProducerId,
// ClientTransactionVersion, NextProducerEpoch) is read too; its tagged
// fields are ignored. The value codec is kmsg's TxnMetadataValue.
//
// Part of the on-disk format: do not change the written versions.

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	keyVersion   = 0 // part of the on-disk format
	valueVersion = 0 // part of the on-disk format
)

// ErrBadRecord marks an undecodable __transaction_state record: every
// decoding error wraps it, and so does a load that met one.
var ErrBadRecord = errors.New("txn: bad __transaction_state record")

// State is the state of a transactional id: Kafka's TransactionState, with
// its on-disk codes. Part of the on-disk format: do not renumber.
type State int8

const (
	Empty             State = 0 // no transaction: after InitProducerId
	Ongoing           State = 1 // partitions were added
	PrepareCommit     State = 2 // EndTxn(commit) written; markers being sent
	PrepareAbort      State = 3 // EndTxn(abort), a fence or a timeout; markers being sent
	CompleteCommit    State = 4 // every commit marker written
	CompleteAbort     State = 5 // every abort marker written
	Dead              State = 6 // expiring: the tombstone is being written
	PrepareEpochFence State = 7 // an ongoing transaction is being aborted to fence its producer
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String is Kafka's name of s (TransactionState.name), as DescribeTransactions
// and ListTransactions answer it.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int8(s))
}

// ParseState returns the State Kafka names name; false when none.
func ParseState(name string) (State, bool) {
	i := slices.Index(stateNames[:], name)
	return State(i), i >= 0
}

// TopicPartition names one partition of a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Value is one state of a transactional id, as a __transaction_state value
// holds it. Partitions are sorted by topic, then partition, without
// duplicates.
type Value struct {
	ProducerID    int64
	ProducerEpoch int16
	TimeoutMs     int32
	State         State
	Partitions    []TopicPartition
	LastUpdateMs  int64
	// StartMs is when the transaction started (its first partition was
	// added); -1 when no transaction ever started since InitProducerId.
	StartMs int64
}

// appendKey appends the key of transactional id to dst.
// REQUIRES: len(id) <= math.MaxInt16 (checked by the coordinator).
func appendKey(dst []byte, id string) []byte {
	dst = binary.BigEndian.AppendUint16(dst, keyVersion)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(id)))
	return append(dst, id...)
}

// decodeKey returns the transactional id of a key. Errors wrap ErrBadRecord:
// a short key, an unknown version, a string that overruns, trailing bytes.
func decodeKey(b []byte) (string, error) {
	if len(b) < 4 {
		return "", fmt.Errorf("%w: key of %d bytes", ErrBadRecord, len(b))
	}
	if v := int16(binary.BigEndian.Uint16(b)); v != keyVersion {
		return "", fmt.Errorf("%w: key version %d", ErrBadRecord, v)
	}
	n := int16(binary.BigEndian.Uint16(b[2:]))
	if n < 0 || int(n) != len(b)-4 {
		return "", fmt.Errorf("%w: key string of length %d in %d bytes", ErrBadRecord, n, len(b)-4)
	}
	return string(b[4:]), nil
}

// appendValue appends v, version 0, to dst.
// REQUIRES: every topic name fits an int16 length (topic names are at most
// 249 bytes).
func appendValue(dst []byte, v Value) []byte {
	kv := kmsg.NewTxnMetadataValue()
	kv.Version = valueVersion
	kv.ProducerID, kv.ProducerEpoch, kv.TimeoutMillis = v.ProducerID, v.ProducerEpoch, v.TimeoutMs
	kv.State = kmsg.TransactionState(v.State)
	kv.LastUpdateTimestamp, kv.StartTimestamp = v.LastUpdateMs, v.StartMs
	if v.State != Empty {
		kv.Topics = []kmsg.TxnMetadataValueTopic{}
		for _, tp := range v.Partitions {
			if n := len(kv.Topics); n == 0 || kv.Topics[n-1].Topic != tp.Topic {
				kv.Topics = append(kv.Topics, kmsg.TxnMetadataValueTopic{Topic: tp.Topic})
			}
			t := &kv.Topics[len(kv.Topics)-1]
			t.Partitions = append(t.Partitions, tp.Partition)
		}
	}
	return kv.AppendTo(dst)
}

// decodeValue decodes a value of version 0 or 1. Bytes after the value are
// ignored, as Kafka's reader ignores them. Errors wrap ErrBadRecord:
// another version, a truncated or overlong value, a state outside 0-7, a
// negative partition or timeout. Partitions come back sorted and unique,
// and nil in Empty.
func decodeValue(b []byte) (Value, error) {
	if len(b) < 2 {
		return Value{}, fmt.Errorf("%w: value of %d bytes", ErrBadRecord, len(b))
	}
	if ver := int16(binary.BigEndian.Uint16(b)); ver != 0 && ver != 1 {
		return Value{}, fmt.Errorf("%w: value version %d", ErrBadRecord, ver)
	}
	var kv kmsg.TxnMetadataValue
	if err := kv.ReadFrom(b); err != nil {
		return Value{}, fmt.Errorf("%w: %v", ErrBadRecord, err)
	}
	v := Value{
		ProducerID: kv.ProducerID, ProducerEpoch: kv.ProducerEpoch, TimeoutMs: kv.TimeoutMillis,
		State: State(kv.State), LastUpdateMs: kv.LastUpdateTimestamp, StartMs: kv.StartTimestamp,
	}
	if v.State < Empty || v.State > PrepareEpochFence {
		return Value{}, fmt.Errorf("%w: state %d", ErrBadRecord, kv.State)
	}
	if v.TimeoutMs < 0 {
		return Value{}, fmt.Errorf("%w: timeout %d ms", ErrBadRecord, v.TimeoutMs)
	}
	for _, t := range kv.Topics {
		if len(t.Topic) > math.MaxInt16 {
			return Value{}, fmt.Errorf("%w: topic of %d bytes", ErrBadRecord, len(t.Topic))
		}
		for _, p := range t.Partitions {
			if p < 0 {
				return Value{}, fmt.Errorf("%w: partition %d of %q", ErrBadRecord, p, t.Topic)
			}
			v.Partitions = append(v.Partitions, TopicPartition{t.Topic, p})
		}
	}
	if v.State == Empty {
		v.Partitions = nil // Kafka writes none: an Empty id has no transaction
	}
	v.Partitions = sortPartitions(v.Partitions)
	return v, nil
}

// sortPartitions sorts tps by topic then partition and drops duplicates, in
// place.
func sortPartitions(tps []TopicPartition) []TopicPartition {
	slices.SortFunc(tps, compareTP)
	return slices.Compact(tps)
}

// compareTP orders partitions by topic, then partition.
func compareTP(a, b TopicPartition) int {
	return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}
