package metastore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sluice/sluice/acl"
)

// ACLStore is the single-node acl.Store: every resource pattern's ACLs in
// one metastore key (layout in format.go). A multi-pattern Add or Remove is
// one synced Pebble batch, so after a crash all or none of it is visible.
//
// Watch reports the changes made through this ACLStore value only: create
// one per metastore (NewACLStore) and share it. Safe for concurrent use.
type ACLStore struct {
	s *Store
	// mu serializes Add and Remove with their notifications, so watchers
	// see changes in the order they were written.
	mu       sync.Mutex
	watchers acl.Watchers
}

// NewACLStore returns the ACL store kept in s.
func NewACLStore(s *Store) *ACLStore { return &ACLStore{s: s} }

var _ acl.Store = (*ACLStore)(nil)

// aclKey is 0x06 | u8 type | u8 pattern type | esc(name).
func aclKey(dst []byte, p acl.ResourcePattern) []byte {
	return appendName(append(dst, kindACL, byte(p.Type), byte(p.PatternType)), p.Name)
}

// decodeACLKey is the inverse of aclKey.
func decodeACLKey(key []byte) (acl.ResourcePattern, error) {
	if len(key) < 3 || key[0] != kindACL {
		return acl.ResourcePattern{}, corruptf(key, "not an acl key")
	}
	name, rest, ok := decodeName(key[3:])
	if !ok || len(rest) != 0 {
		return acl.ResourcePattern{}, corruptf(key, "bad name in acl key")
	}
	return acl.ResourcePattern{Type: acl.ResourceType(key[1]), PatternType: acl.PatternType(key[2]), Name: name}, nil
}

// encodeACLs appends the version-1 encoding of entries (format.go), which
// must be in acl.SortEntries form.
func encodeACLs(dst []byte, entries []acl.Entry) []byte {
	dst = append(dst, aclV1)
	dst = appendU32(dst, uint32(len(entries)))
	for _, e := range entries {
		dst = appendStr(appendStr(dst, e.Principal), e.Host)
		dst = append(dst, byte(e.Operation), byte(e.Permission))
	}
	return dst
}

// decodeACLs decodes a value written by encodeACLs; damaged input returns
// an error wrapping ErrCorrupt that names key.
func decodeACLs(key, v []byte) ([]acl.Entry, error) {
	d := decoder{b: v}
	if ver := d.u8(); ver != aclV1 {
		return nil, corruptf(key, "acl value version %d", firstByte(v))
	}
	n := d.count(4 + 4 + 1 + 1)
	out := make([]acl.Entry, n)
	for i := range out {
		out[i].Principal = d.str()
		out[i].Host = d.str()
		out[i].Operation = acl.Operation(d.u8())
		out[i].Permission = acl.Permission(d.u8())
	}
	if !d.done() {
		return nil, corruptf(key, "acl value of %d bytes is truncated or has trailing bytes", len(v))
	}
	return out, nil
}

// Add implements acl.Store.
func (a *ACLStore) Add(_ context.Context, bindings []acl.Binding) error {
	groups, err := acl.GroupByPattern(bindings)
	if err != nil {
		return err
	}
	if len(groups) == 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	changes, err := a.add(groups)
	if err != nil {
		return err
	}
	a.watchers.Notify(changes)
	return nil
}

// add writes the new entries of groups in one batch and returns what
// changed. REQUIRES: a.mu held.
func (a *ACLStore) add(groups map[acl.ResourcePattern][]acl.Entry) ([]acl.Change, error) {
	db, err := a.s.acquire()
	if err != nil {
		return nil, err
	}
	defer a.s.mu.RUnlock()
	b := db.NewBatch()
	defer b.Close()
	var changes []acl.Change
	for p, added := range groups {
		key := aclKey(nil, p)
		current, err := getACLs(db, key)
		if err != nil {
			return nil, err
		}
		merged, changed := acl.Merge(current, added)
		if !changed {
			continue
		}
		if err := b.Set(key, encodeACLs(nil, merged), nil); err != nil {
			return nil, fmt.Errorf("metastore: add acls on %v: %w", p, err)
		}
		changes = append(changes, acl.Change{Pattern: p, Entries: merged})
	}
	if len(changes) == 0 {
		return nil, nil
	}
	if err := b.Commit(syncWrite); err != nil {
		return nil, fmt.Errorf("metastore: add acls: %w", err)
	}
	return changes, nil
}

// Remove implements acl.Store. A filter naming its patterns exactly
// (acl.PatternFilter.Exact) reads only their keys; any other scans every
// ACL key.
func (a *ACLStore) Remove(_ context.Context, f acl.Filter) ([]acl.Binding, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	removed, changes, err := a.remove(f)
	if err != nil {
		return nil, err
	}
	a.watchers.Notify(changes)
	return removed, nil
}

// remove deletes what f matches in one batch and returns the removed
// bindings and the changes. REQUIRES: a.mu held.
func (a *ACLStore) remove(f acl.Filter) ([]acl.Binding, []acl.Change, error) {
	db, err := a.s.acquire()
	if err != nil {
		return nil, nil, err
	}
	defer a.s.mu.RUnlock()
	type stored struct {
		p       acl.ResourcePattern
		entries []acl.Entry
	}
	var candidates []stored
	if ps, ok := f.Pattern.Exact(); ok {
		for _, p := range ps {
			entries, err := getACLs(db, aclKey(nil, p))
			if err != nil {
				return nil, nil, err
			}
			candidates = append(candidates, stored{p, entries})
		}
	} else {
		err := scanDB(db, []byte{kindACL}, []byte{kindACL + 1}, func(k, v []byte) error {
			p, err := decodeACLKey(k)
			if err != nil || !f.Pattern.Matches(p) {
				return err
			}
			entries, err := decodeACLs(k, v)
			candidates = append(candidates, stored{p, entries})
			return err
		})
		if err != nil {
			return nil, nil, err
		}
	}
	b := db.NewBatch()
	defer b.Close()
	var removed []acl.Binding
	var changes []acl.Change
	for _, c := range candidates {
		var kept []acl.Entry
		for _, e := range c.entries {
			if f.Entry.Matches(e) {
				removed = append(removed, acl.Binding{Pattern: c.p, Entry: e})
			} else {
				kept = append(kept, e)
			}
		}
		if len(kept) == len(c.entries) {
			continue
		}
		key := aclKey(nil, c.p)
		if len(kept) == 0 {
			err = b.Delete(key, nil)
		} else {
			err = b.Set(key, encodeACLs(nil, kept), nil)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("metastore: remove acls on %v: %w", c.p, err)
		}
		changes = append(changes, acl.Change{Pattern: c.p, Entries: kept})
	}
	if len(changes) == 0 {
		return nil, nil, nil
	}
	if err := b.Commit(syncWrite); err != nil {
		return nil, nil, fmt.Errorf("metastore: remove acls: %w", err)
	}
	return removed, changes, nil
}

// All implements acl.Store. A damaged record fails the whole call with an
// error wrapping ErrCorrupt.
func (a *ACLStore) All(context.Context) ([]acl.Binding, error) {
	var out []acl.Binding
	err := a.s.scan([]byte{kindACL}, []byte{kindACL + 1}, func(k, v []byte) error {
		p, err := decodeACLKey(k)
		if err != nil {
			return err
		}
		entries, err := decodeACLs(k, v)
		for _, e := range entries {
			out = append(out, acl.Binding{Pattern: p, Entry: e})
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	acl.SortBindings(out)
	return out, nil
}

// Watch implements acl.Store: fn is called, with the writer's lock held,
// after each Add or Remove through a that changed something.
func (a *ACLStore) Watch(fn func([]acl.Change)) (cancel func()) { return a.watchers.Add(fn) }

// getACLs returns the entries stored under key, nil when there are none.
func getACLs(db *pebble.DB, key []byte) ([]acl.Entry, error) {
	v, closer, err := db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("metastore: get %q: %w", key, err)
	}
	defer closer.Close()
	return decodeACLs(key, v)
}
