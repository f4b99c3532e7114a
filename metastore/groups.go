package metastore

import (
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
	// offsets.retention.minutes of empty groups). Stored with millisecond
	// precision.
	StateTime time.Time
}

// encodeGroup appends the version-1 encoding of g (format.go) to dst.
func encodeGroup(dst []byte, g Group) []byte {
	dst = append(dst, groupV1)
	dst = appendStr(dst, g.Name)
	dst = appendStr(dst, g.State)
	dst = appendStr(dst, g.ProtocolType)
	dst = appendStr(dst, g.Protocol)
	dst = appendU32(dst, uint32(g.Generation))
	dst = appendStr(dst, g.Leader)
	dst = appendTime(dst, g.StateTime)
	dst = appendU32(dst, uint32(len(g.Members)))
	for _, m := range g.Members {
		dst = appendStr(dst, m.MemberID)
		dst = appendStr(dst, m.GroupInstanceID)
		dst = appendStr(dst, m.ClientID)
		dst = appendStr(dst, m.ClientHost)
		dst = appendI64(dst, int64(m.RebalanceTimeout))
		dst = appendI64(dst, int64(m.SessionTimeout))
		dst = appendStr(dst, m.ProtocolType)
		dst = appendU32(dst, uint32(len(m.Protocols)))
		for _, p := range m.Protocols {
			dst = appendBytes(appendStr(dst, p.Name), p.Metadata)
		}
		dst = appendBytes(dst, m.Assignment)
	}
	return dst
}

// memberMinSize is the encoded size of a GroupMember with empty fields.
const memberMinSize = 4*4 + 8 + 8 + 4 + 4 + 4

// decodeGroup decodes a value written by encodeGroup; damaged input returns
// an error wrapping ErrCorrupt that names key. Empty byte slices come back
// nil, as do empty Members and Protocols.
func decodeGroup(key, v []byte) (Group, error) {
	d := decoder{b: v}
	if ver := d.u8(); ver != groupV1 {
		return Group{}, corruptf(key, "group value version %d", firstByte(v))
	}
	var g Group
	g.Name = d.str()
	g.State = d.str()
	g.ProtocolType = d.str()
	g.Protocol = d.str()
	g.Generation = d.i32()
	g.Leader = d.str()
	g.StateTime = d.time()
	if n := d.count(memberMinSize); n > 0 {
		g.Members = make([]GroupMember, n)
		for i := range g.Members {
			m := &g.Members[i]
			m.MemberID = d.str()
			m.GroupInstanceID = d.str()
			m.ClientID = d.str()
			m.ClientHost = d.str()
			m.RebalanceTimeout = time.Duration(d.i64())
			m.SessionTimeout = time.Duration(d.i64())
			m.ProtocolType = d.str()
			if np := d.count(8); np > 0 {
				m.Protocols = make([]GroupProtocol, np)
				for j := range m.Protocols {
					m.Protocols[j] = GroupProtocol{Name: d.str(), Metadata: d.bytes()}
				}
			}
			m.Assignment = d.bytes()
		}
	}
	if !d.done() {
		return Group{}, corruptf(key, "group value of %d bytes is truncated or has trailing bytes", len(v))
	}
	return g, nil
}

// PutGroup creates or replaces the state of group g.Name, synced before it
// returns. Committed offsets are untouched.
func (s *Store) PutGroup(g Group) error {
	return s.set(groupKey(nil, g.Name), encodeGroup(nil, g))
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

// DeleteGroup deletes the group's saved state AND all its committed and
// pending transactional offsets in one atomic, synced batch. It returns
// ErrNotFound when the group has none of them.
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
	pprefix := pendingGroupPrefix(nil, name)
	pend := prefixEnd(pprefix)
	exists, err := hasKey(db, gkey)
	if err == nil && !exists {
		exists, err = hasRange(db, prefix, end)
	}
	if err == nil && !exists {
		exists, err = hasRange(db, pprefix, pend)
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
	if err := b.DeleteRange(pprefix, pend, nil); err != nil {
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
