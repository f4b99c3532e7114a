package metastore

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// GroupMember is one member of a classic-protocol consumer group.
type GroupMember struct {
	MemberID                         string
	GroupInstanceID                  string // "" when dynamic
	ClientID, ClientHost             string
	RebalanceTimeout, SessionTimeout time.Duration
	ProtocolType                     string
	Protocols                        []GroupProtocol // in the member's preference order
	Assignment                       []byte
}

// GroupProtocol is one protocol a member supports, with its metadata.
type GroupProtocol struct {
	Name     string
	Metadata []byte
}

// Group is a consumer group's state, saved after each completed rebalance.
type Group struct {
	Name         string
	State        string // "Empty", "Stable", ...
	ProtocolType string
	Protocol     string // chosen protocol name
	Generation   int32
	Leader       string
	Members      []GroupMember
	// StateTime is when the group last changed state (for
	// offsets.retention.minutes of empty groups).
	StateTime time.Time
}

// groupJSON and memberJSON are the version-1 JSON form of a Group. Part of
// the on-disk format: add fields freely, never rename or re-type one.
// []byte fields are base64 in JSON; durations are nanoseconds.
type groupJSON struct {
	Name         string       `json:"name"`
	State        string       `json:"state"`
	ProtocolType string       `json:"protocol_type"`
	Protocol     string       `json:"protocol"`
	Generation   int32        `json:"generation"`
	Leader       string       `json:"leader"`
	Members      []memberJSON `json:"members,omitempty"`
	StateTime    time.Time    `json:"state_time"`
}

type memberJSON struct {
	MemberID         string         `json:"member_id"`
	GroupInstanceID  string         `json:"group_instance_id,omitempty"`
	ClientID         string         `json:"client_id"`
	ClientHost       string         `json:"client_host"`
	RebalanceTimeout int64          `json:"rebalance_timeout_ns"`
	SessionTimeout   int64          `json:"session_timeout_ns"`
	ProtocolType     string         `json:"protocol_type"`
	Protocols        []protocolJSON `json:"protocols,omitempty"`
	Assignment       []byte         `json:"assignment,omitempty"`
}

type protocolJSON struct {
	Name     string `json:"name"`
	Metadata []byte `json:"metadata,omitempty"`
}

func encodeGroup(g Group) ([]byte, error) {
	j := groupJSON{
		Name: g.Name, State: g.State, ProtocolType: g.ProtocolType, Protocol: g.Protocol,
		Generation: g.Generation, Leader: g.Leader, StateTime: g.StateTime,
	}
	for _, m := range g.Members {
		mj := memberJSON{
			MemberID: m.MemberID, GroupInstanceID: m.GroupInstanceID,
			ClientID: m.ClientID, ClientHost: m.ClientHost,
			RebalanceTimeout: int64(m.RebalanceTimeout), SessionTimeout: int64(m.SessionTimeout),
			ProtocolType: m.ProtocolType, Assignment: m.Assignment,
		}
		for _, p := range m.Protocols {
			mj.Protocols = append(mj.Protocols, protocolJSON(p))
		}
		j.Members = append(j.Members, mj)
	}
	js, err := json.Marshal(j)
	if err != nil {
		return nil, fmt.Errorf("metastore: encode group %q: %w", g.Name, err)
	}
	return append([]byte{groupV1}, js...), nil
}

// decodeGroup decodes a value written by encodeGroup; damaged input returns
// an error wrapping ErrCorrupt that names key. Empty byte slices come back
// nil.
func decodeGroup(key, v []byte) (Group, error) {
	if len(v) < 1 || v[0] != groupV1 {
		return Group{}, corruptf(key, "group value version %d", firstByte(v))
	}
	var j groupJSON
	if err := json.Unmarshal(v[1:], &j); err != nil {
		return Group{}, corruptf(key, "group value: %v", err)
	}
	g := Group{
		Name: j.Name, State: j.State, ProtocolType: j.ProtocolType, Protocol: j.Protocol,
		Generation: j.Generation, Leader: j.Leader, StateTime: j.StateTime,
	}
	for _, mj := range j.Members {
		m := GroupMember{
			MemberID: mj.MemberID, GroupInstanceID: mj.GroupInstanceID,
			ClientID: mj.ClientID, ClientHost: mj.ClientHost,
			RebalanceTimeout: time.Duration(mj.RebalanceTimeout), SessionTimeout: time.Duration(mj.SessionTimeout),
			ProtocolType: mj.ProtocolType, Assignment: nilIfEmpty(mj.Assignment),
		}
		for _, p := range mj.Protocols {
			m.Protocols = append(m.Protocols, GroupProtocol{Name: p.Name, Metadata: nilIfEmpty(p.Metadata)})
		}
		g.Members = append(g.Members, m)
	}
	return g, nil
}

func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// PutGroup creates or replaces the state of group g.Name, synced before it
// returns. Committed offsets are untouched.
func (s *Store) PutGroup(g Group) error {
	v, err := encodeGroup(g)
	if err != nil {
		return err
	}
	return s.set(groupKey(nil, g.Name), v)
}

// GetGroup returns the saved state of the group name, or ErrNotFound.
func (s *Store) GetGroup(name string) (Group, error) {
	key := groupKey(nil, name)
	var g Group
	err := s.get(key, func(v []byte) (err error) {
		g, err = decodeGroup(key, v)
		return err
	})
	return g, err
}

// ListGroups returns the saved state of every group, sorted by name. Groups
// that have committed offsets but no saved state are not included (see
// ListOffsetGroups).
func (s *Store) ListGroups() ([]Group, error) {
	var out []Group
	err := s.scan([]byte{kindGroup}, []byte{kindGroup + 1}, func(k, v []byte) error {
		g, err := decodeGroup(k, v)
		if err != nil {
			return err
		}
		out = append(out, g)
		return nil
	})
	return out, err
}

// DeleteGroup deletes the group's saved state AND all its committed offsets
// in one atomic, synced batch. It returns ErrNotFound when the group has
// neither saved state nor committed offsets.
func (s *Store) DeleteGroup(name string) error {
	db, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.mu.RUnlock()
	s.delMu.Lock()
	defer s.delMu.Unlock()

	gkey := groupKey(nil, name)
	prefix := offsetGroupPrefix(nil, name)
	end := prefixEnd(prefix)
	exists, err := hasKey(db, gkey)
	if err == nil && !exists {
		exists, err = hasRange(db, prefix, end)
	}
	if err != nil {
		return fmt.Errorf("metastore: delete group %q: %w", name, err)
	}
	if !exists {
		return ErrNotFound
	}
	b := db.NewBatch()
	defer b.Close()
	if err := b.Delete(gkey, nil); err != nil {
		return fmt.Errorf("metastore: delete group %q: %w", name, err)
	}
	if err := b.DeleteRange(prefix, end, nil); err != nil {
		return fmt.Errorf("metastore: delete group %q: %w", name, err)
	}
	if err := b.Commit(syncWrite); err != nil {
		return fmt.Errorf("metastore: delete group %q: %w", name, err)
	}
	return nil
}

// hasKey reports whether key exists in db.
func hasKey(db *pebble.DB, key []byte) (bool, error) {
	_, closer, err := db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, closer.Close()
}

// hasRange reports whether any key lies in [lower, upper).
func hasRange(db *pebble.DB, lower, upper []byte) (bool, error) {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return false, err
	}
	found := it.First()
	if err := it.Close(); err != nil {
		return false, err
	}
	return found, nil
}
