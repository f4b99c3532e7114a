package offsets

// The persistence of next-generation consumer groups (KIP-848) in
// __consumer_offsets: the records of consumerformat.go appended through the
// same path as offset commits (PersistConsumer), and, on load, the latest
// record of each consumer-group key handed to the group coordinator in log
// order (Options.ReloadConsumer), which replays them into its groups.

import (
	"context"
	"encoding/binary"
)

// ConsumerRecord is one consumer group record: its key and its value, nil
// for a tombstone.
type ConsumerRecord struct {
	Key   ConsumerKey
	Value ConsumerValue
}

// group and encode make ConsumerRecord a groupRecord (grouppersist.go).
func (r ConsumerRecord) group() string { return r.Key.Group }

func (r ConsumerRecord) encode() (key, value []byte, err error) {
	if key, err = AppendConsumerKey(nil, r.Key); err != nil {
		return nil, nil, err
	}
	if r.Value != nil {
		if value, err = r.Value.AppendTo(nil); err != nil {
			return nil, nil, err
		}
	}
	return key, value, nil
}

// PersistConsumer appends recs, records of consumer group name, as one
// batch with acks=all to the group's partition and returns once they are
// committed. Errors wrap coordlog.ErrNotCoordinator when this broker does
// not lead that partition, ErrTooLong when a string does not fit a record,
// ErrBadRecord for a record of another group or of no consumer type.
func (c *Coordinator) PersistConsumer(ctx context.Context, name string, recs []ConsumerRecord) error {
	return persistGroupRecords(ctx, c, name, recs)
}

// applyConsumer keeps the record at offset pos as the latest of its key
// (what compaction would keep). Errors wrap ErrBadRecord.
func (v *view) applyConsumer(key, value []byte, pos int64) error {
	k, err := DecodeConsumerKey(key)
	if err != nil {
		return err
	}
	r := ConsumerRecord{Key: k}
	if value != nil {
		if r.Value, err = DecodeConsumerValue(k.Type, value); err != nil {
			return err
		}
	}
	v.consumer.keep(k.Group, key, r, pos)
	return nil
}

// consumerGroups returns, for each group match selects, the latest record
// of each of its keys in log order (tombstones included: the group
// coordinator's replay applies them).
func (v *view) consumerGroups(match func(string) bool) map[string][]ConsumerRecord {
	return v.consumer.groups(match)
}

// isConsumerKey reports whether a __consumer_offsets key is one of a
// consumer group record (its version is a consumer record type).
func isConsumerKey(key []byte) bool {
	return len(key) >= 2 && IsConsumerRecordType(int16(binary.BigEndian.Uint16(key)))
}
