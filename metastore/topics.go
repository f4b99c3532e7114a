package metastore

import (
	"encoding/binary"
	"fmt"
	"sort"
	"time"
)

// Topic is a topic's durable metadata.
type Topic struct {
	Name string
	// ID is the topic's UUID (KIP-516), assigned by the caller at creation
	// and never changed while the topic lives.
	ID                [16]byte
	Partitions        int32
	ReplicationFactor int16
	// Assignment[p] lists the replica broker ids of partition p (single
	// node: [[0],[0],...]).
	Assignment [][]int32
	// Configs holds topic-level overrides only (retention.ms, ...). Topics
	// returned by the store always have a non-nil Configs.
	Configs map[string]string
	// CreatedAt is stored with millisecond precision.
	CreatedAt time.Time
}

// encodeTopic appends the version-1 encoding of t (format.go) to dst.
// Configs are written in sorted key order so equal topics encode equally.
func encodeTopic(dst []byte, t Topic) []byte {
	dst = append(dst, topicV1)
	dst = appendStr(dst, t.Name)
	dst = append(dst, t.ID[:]...)
	dst = appendU32(dst, uint32(t.Partitions))
	dst = binary.BigEndian.AppendUint16(dst, uint16(t.ReplicationFactor))
	dst = appendU32(dst, uint32(len(t.Assignment)))
	for _, replicas := range t.Assignment {
		dst = appendU32(dst, uint32(len(replicas)))
		for _, r := range replicas {
			dst = appendU32(dst, uint32(r))
		}
	}
	keys := make([]string, 0, len(t.Configs))
	for k := range t.Configs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	dst = appendU32(dst, uint32(len(keys)))
	for _, k := range keys {
		dst = appendStr(appendStr(dst, k), t.Configs[k])
	}
	return appendTime(dst, t.CreatedAt)
}

// decodeTopic decodes a value written by encodeTopic; damaged input returns
// an error wrapping ErrCorrupt that names key. Configs is never nil; an
// empty replica list comes back as an empty, non-nil slice.
func decodeTopic(key, v []byte) (Topic, error) {
	d := decoder{b: v}
	if ver := d.u8(); ver != topicV1 {
		return Topic{}, corruptf(key, "topic value version %d", firstByte(v))
	}
	var t Topic
	t.Name = d.str()
	copy(t.ID[:], d.take(len(t.ID)))
	t.Partitions = d.i32()
	t.ReplicationFactor = d.i16()
	if n := d.count(4); n > 0 {
		t.Assignment = make([][]int32, n)
		for p := range t.Assignment {
			replicas := make([]int32, d.count(4))
			for i := range replicas {
				replicas[i] = d.i32()
			}
			t.Assignment[p] = replicas
		}
	}
	n := d.count(8)
	t.Configs = make(map[string]string, n)
	for i := 0; i < n; i++ {
		k := d.str()
		t.Configs[k] = d.str()
	}
	t.CreatedAt = d.time()
	if !d.done() {
		return Topic{}, corruptf(key, "topic value of %d bytes is truncated or has trailing bytes", len(v))
	}
	return t, nil
}

// PutTopic creates or replaces the topic t.Name, synced before it returns.
// It returns ErrInvalid for an empty name or a negative partition count.
func (s *Store) PutTopic(t Topic) error {
	if t.Name == "" || t.Partitions < 0 {
		return fmt.Errorf("%w: topic %q with %d partitions", ErrInvalid, t.Name, t.Partitions)
	}
	return s.set(topicKey(nil, t.Name), encodeTopic(nil, t))
}

// GetTopic returns the topic named name, or ErrNotFound.
func (s *Store) GetTopic(name string) (Topic, error) {
	key := topicKey(nil, name)
	var t Topic
	err := s.get(key, func(v []byte) (err error) {
		t, err = decodeTopic(key, v)
		return err
	})
	return t, err
}

// ListTopics returns every topic sorted by name. A damaged record fails the
// whole call with an error wrapping ErrCorrupt.
func (s *Store) ListTopics() ([]Topic, error) {
	var out []Topic
	err := s.scan([]byte{kindTopic}, []byte{kindTopic + 1}, func(k, v []byte) error {
		t, err := decodeTopic(k, v)
		if err != nil {
			return err
		}
		out = append(out, t)
		return nil
	})
	return out, err
}

// DeleteTopic removes the topic named name, synced; ErrNotFound if absent.
// Committed offsets of the topic's partitions are left to the caller
// (Kafka removes them lazily; see DeleteOffsets).
func (s *Store) DeleteTopic(name string) error {
	return s.deleteExisting(topicKey(nil, name))
}
