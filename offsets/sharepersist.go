package offsets

// The persistence of share groups (KIP-932) in __consumer_offsets, as that
// of consumer groups (consumerpersist.go): the records of shareformat.go
// appended through the offsets path (PersistShare), and, on load, the
// latest record of each share-group key handed to the group coordinator in
// log order (Options.ReloadShare).

import (
	"context"
	"encoding/binary"
)

// ShareRecord is one share group record: its key and its value, nil for a
// tombstone.
type ShareRecord struct {
	Key   ShareKey
	Value ShareValue
}

// group and encode make ShareRecord a groupRecord (grouppersist.go).
func (r ShareRecord) group() string { return r.Key.Group }

func (r ShareRecord) encode() (key, value []byte, err error) {
	if key, err = AppendShareKey(nil, r.Key); err != nil {
		return nil, nil, err
	}
	if r.Value != nil {
		if value, err = r.Value.AppendTo(nil); err != nil {
			return nil, nil, err
		}
	}
	return key, value, nil
}

// PersistShare appends recs, records of share group name, as one batch with
// acks=all to the group's partition and returns once they are committed.
// Errors as PersistConsumer's.
func (c *Coordinator) PersistShare(ctx context.Context, name string, recs []ShareRecord) error {
	return persistGroupRecords(ctx, c, name, recs)
}

// applyShare keeps the record at offset pos as the latest of its key.
// Errors wrap ErrBadRecord.
func (v *view) applyShare(key, value []byte, pos int64) error {
	k, err := DecodeShareKey(key)
	if err != nil {
		return err
	}
	r := ShareRecord{Key: k}
	if value != nil {
		if r.Value, err = DecodeShareValue(k.Type, value); err != nil {
			return err
		}
	}
	v.share.keep(k.Group, key, r, pos)
	return nil
}

// shareGroups returns, for each share group match selects, the latest
// record of each of its keys in log order, tombstones included.
func (v *view) shareGroups(match func(string) bool) map[string][]ShareRecord {
	return v.share.groups(match)
}

// isShareKey reports whether a __consumer_offsets key is one of a share
// group record.
func isShareKey(key []byte) bool {
	return len(key) >= 2 && IsShareRecordType(int16(binary.BigEndian.Uint16(key)))
}
