package metastore

import (
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// CommittedOffset is one committed consumer offset. Times are stored with
// millisecond precision (as Kafka does) and come back in the local zone.
type CommittedOffset struct {
	Offset      int64
	LeaderEpoch int32 // -1 when unknown
	Metadata    string
	CommitTime  time.Time
	ExpireTime  time.Time // zero: none (v1 explicit expiry)
}

// CommitOffsets writes all offsets of one commit for group in one atomic
// batch, synced before it returns: after a crash either every offset of the
// commit is visible or none is. An empty map is a no-op. Offsets of
// partitions not in the map are kept.
//
// This is the hot write path (consumers commit often): it allocates only a
// constant number of times per call, not per partition.
func (s *Store) CommitOffsets(group string, offsets map[TopicPartition]CommittedOffset) error {
	if len(offsets) == 0 {
		return nil
	}
	db, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.mu.RUnlock()

	bp := s.getBuf()
	defer s.putBuf(bp)
	buf := *bp

	b := db.NewBatch()
	defer b.Close()
	for tp, o := range offsets {
		buf = offsetKey(buf[:0], group, tp)
		klen := len(buf)
		buf = appendOffset(buf, o)
		// Batch.Set copies key and value, so buf is reused for the next one.
		if err := b.Set(buf[:klen], buf[klen:], nil); err != nil {
			return fmt.Errorf("metastore: commit offsets of group %q: %w", group, err)
		}
	}
	*bp = buf
	if err := b.Commit(syncWrite); err != nil {
		return fmt.Errorf("metastore: commit offsets of group %q: %w", group, err)
	}
	return nil
}

// FetchOffsets returns every committed offset of group; an empty, non-nil
// map if it has none. The map is the caller's. A damaged record fails the
// call with an error wrapping ErrCorrupt.
func (s *Store) FetchOffsets(group string) (map[TopicPartition]CommittedOffset, error) {
	prefix := offsetGroupPrefix(nil, group)
	out := make(map[TopicPartition]CommittedOffset)
	var prevTopic string
	err := s.scan(prefix, prefixEnd(prefix), func(k, v []byte) error {
		tp, err := decodeOffsetTP(k, len(prefix), prevTopic)
		if err != nil {
			return err
		}
		o, err := decodeOffset(k, v)
		if err != nil {
			return err
		}
		out[tp] = o
		prevTopic = tp.Topic
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteOffsets removes the committed offsets of group for tps in one
// atomic, synced batch. Partitions without a committed offset are ignored.
func (s *Store) DeleteOffsets(group string, tps []TopicPartition) error {
	if len(tps) == 0 {
		return nil
	}
	db, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.mu.RUnlock()
	b := db.NewBatch()
	defer b.Close()
	var key []byte
	for _, tp := range tps {
		key = offsetKey(key[:0], group, tp)
		if err := b.Delete(key, nil); err != nil {
			return fmt.Errorf("metastore: delete offsets of group %q: %w", group, err)
		}
	}
	if err := b.Commit(syncWrite); err != nil {
		return fmt.Errorf("metastore: delete offsets of group %q: %w", group, err)
	}
	return nil
}

// ListOffsetGroups returns the names of the groups that have at least one
// committed offset, sorted. It visits one key per group, skipping the rest
// of each group's range with a seek.
func (s *Store) ListOffsetGroups() (groups []string, err error) {
	return s.listNames(kindOffset, "offset")
}

// listNames returns the distinct group names that start the keys of kind
// (each key 'kind esc(group) ...'), sorted, visiting one key per group.
// what names the kind in errors.
func (s *Store) listNames(kind byte, what string) (groups []string, err error) {
	db, err := s.acquire()
	if err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	it, err := db.NewIter(&pebble.IterOptions{
		LowerBound: []byte{kind},
		UpperBound: []byte{kind + 1},
	})
	if err != nil {
		return nil, fmt.Errorf("metastore: list %s groups: %w", what, err)
	}
	defer func() {
		if cerr := it.Close(); cerr != nil && err == nil {
			groups, err = nil, fmt.Errorf("metastore: list %s groups: %w", what, cerr)
		}
	}()
	var seek []byte
	for ok := it.First(); ok; {
		k := it.Key()
		group, rest, nameOK := decodeName(k[1:])
		if !nameOK {
			return nil, corruptf(k, "bad group name in %s key", what)
		}
		groups = append(groups, group)
		// Next group: the bound just past this group's prefix.
		plen := len(k) - len(rest)
		seek = append(seek[:0], k[:plen]...)
		seek[plen-1] = escLimit
		ok = it.SeekGE(seek)
	}
	return groups, nil
}
