package metastore

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
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
	Configs   map[string]string
	CreatedAt time.Time
}

// topicJSON is the version-1 JSON form of a Topic. Part of the on-disk
// format: add fields freely (old readers ignore them), never rename or
// re-type one.
type topicJSON struct {
	Name              string            `json:"name"`
	ID                string            `json:"id"` // 32 hex digits
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replication_factor"`
	Assignment        [][]int32         `json:"assignment"`
	Configs           map[string]string `json:"configs,omitempty"`
	CreatedAt         time.Time         `json:"created_at"`
}

func encodeTopic(t Topic) ([]byte, error) {
	js, err := json.Marshal(topicJSON{
		Name:              t.Name,
		ID:                hex.EncodeToString(t.ID[:]),
		Partitions:        t.Partitions,
		ReplicationFactor: t.ReplicationFactor,
		Assignment:        t.Assignment,
		Configs:           t.Configs,
		CreatedAt:         t.CreatedAt,
	})
	if err != nil {
		return nil, fmt.Errorf("metastore: encode topic %q: %w", t.Name, err)
	}
	return append([]byte{topicV1}, js...), nil
}

// decodeTopic decodes a value written by encodeTopic; damaged input returns
// an error wrapping ErrCorrupt that names key.
func decodeTopic(key, v []byte) (Topic, error) {
	if len(v) < 1 || v[0] != topicV1 {
		return Topic{}, corruptf(key, "topic value version %d", firstByte(v))
	}
	var j topicJSON
	if err := json.Unmarshal(v[1:], &j); err != nil {
		return Topic{}, corruptf(key, "topic value: %v", err)
	}
	t := Topic{
		Name:              j.Name,
		Partitions:        j.Partitions,
		ReplicationFactor: j.ReplicationFactor,
		Assignment:        j.Assignment,
		Configs:           j.Configs,
		CreatedAt:         j.CreatedAt,
	}
	if n, err := hex.Decode(t.ID[:], []byte(j.ID)); err != nil || n != len(t.ID) || len(j.ID) != 2*len(t.ID) {
		return Topic{}, corruptf(key, "topic id %q", j.ID)
	}
	if t.Configs == nil {
		t.Configs = map[string]string{}
	}
	return t, nil
}

// PutTopic creates or replaces the topic t.Name, synced before it returns.
// It returns ErrInvalid for an empty name or a negative partition count.
func (s *Store) PutTopic(t Topic) error {
	if t.Name == "" || t.Partitions < 0 {
		return fmt.Errorf("%w: topic %q with %d partitions", ErrInvalid, t.Name, t.Partitions)
	}
	v, err := encodeTopic(t)
	if err != nil {
		return err
	}
	return s.set(topicKey(nil, t.Name), v)
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
