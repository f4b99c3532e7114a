package acl

import (
	"cmp"
	"context"
	"slices"
	"sync"
)

// Store is where ACLs persist: the metastore on a single node
// (metastore.ACLStore), ZooKeeper in cluster mode (cluster.ACLStore), memory
// in tests (MemStore). Every method is safe for concurrent use. The
// package acltest checks an implementation against this contract.
type Store interface {
	// Add stores bindings. Each must be valid (Binding.Validate; otherwise
	// nothing is stored and the error wraps ErrInvalid). Adding a binding
	// that is already stored is not an error and changes nothing. Bindings
	// on different patterns may be stored one pattern at a time: after an
	// error, some patterns may have been updated.
	Add(ctx context.Context, bindings []Binding) error
	// Remove deletes every stored binding f matches and returns them (in no
	// particular order; nil when none matched). An invalid filter is an
	// error wrapping ErrInvalid. As with Add, an error may leave some
	// patterns updated; the bindings returned with it were removed.
	Remove(ctx context.Context, f Filter) ([]Binding, error)
	// All returns every stored binding, sorted by SortBindings' order. The
	// caller owns the slice. All never waits for a watch callback to
	// return (Authorizer.Follow calls it while holding back callbacks).
	All(ctx context.Context) ([]Binding, error)
	// Watch calls fn with the patterns whose ACLs changed, each with its
	// complete new set of entries, after every change the store learns of:
	// those made through this Store value and, for a shared store, by other
	// brokers. Calls are made one at a time, in the order the changes were
	// made, never from inside Watch itself; fn must not call Add or Remove
	// on the store. The changes slice is only valid during the call. cancel
	// stops further calls (a call in flight may still complete).
	Watch(fn func(changes []Change)) (cancel func())
}

// Change is the new state of one pattern's ACLs: Entries is the complete
// set now stored for Pattern, empty when it has none left.
type Change struct {
	Pattern ResourcePattern
	Entries []Entry
}

// ComparePatterns orders patterns by type, pattern type, then name.
func ComparePatterns(a, b ResourcePattern) int {
	return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.PatternType, b.PatternType), cmp.Compare(a.Name, b.Name))
}

// CompareEntries orders entries by principal, host, operation, then
// permission.
func CompareEntries(a, b Entry) int {
	return cmp.Or(cmp.Compare(a.Principal, b.Principal), cmp.Compare(a.Host, b.Host),
		cmp.Compare(a.Operation, b.Operation), cmp.Compare(a.Permission, b.Permission))
}

// SortBindings sorts bs by pattern (ComparePatterns), then entry
// (CompareEntries): the order of Store.All and of DescribeAcls answers.
func SortBindings(bs []Binding) {
	slices.SortFunc(bs, func(a, b Binding) int {
		return cmp.Or(ComparePatterns(a.Pattern, b.Pattern), CompareEntries(a.Entry, b.Entry))
	})
}

// SortEntries sorts es with CompareEntries and drops duplicates; stores
// keep each pattern's entries in this form. It returns the shortened slice.
func SortEntries(es []Entry) []Entry {
	slices.SortFunc(es, CompareEntries)
	return slices.Compact(es)
}

// GroupByPattern validates bindings and groups their entries by pattern,
// for a Store's Add. The first invalid binding is returned as an error
// wrapping ErrInvalid.
func GroupByPattern(bindings []Binding) (map[ResourcePattern][]Entry, error) {
	out := make(map[ResourcePattern][]Entry)
	for _, b := range bindings {
		if err := b.Validate(); err != nil {
			return nil, err
		}
		out[b.Pattern] = append(out[b.Pattern], b.Entry)
	}
	return out, nil
}

// Merge returns the sorted, duplicate-free union of current and added,
// and whether it differs from current. current must be in SortEntries
// form; neither argument is modified.
func Merge(current, added []Entry) (merged []Entry, changed bool) {
	merged = SortEntries(append(slices.Clone(current), added...))
	return merged, !slices.Equal(merged, current)
}

// Watchers is a list of watch callbacks, for Store implementations: Add
// registers one, Notify calls them all. The caller serializes Notify (so
// callbacks see changes in order).
type Watchers struct {
	mu   sync.Mutex
	next int
	fns  map[int]func([]Change)
}

// Add registers fn and returns the function that removes it.
func (w *Watchers) Add(fn func([]Change)) (cancel func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fns == nil {
		w.fns = map[int]func([]Change){}
	}
	id := w.next
	w.next++
	w.fns[id] = fn
	return func() {
		w.mu.Lock()
		delete(w.fns, id)
		w.mu.Unlock()
	}
}

// Notify calls every registered callback with changes, unless changes is
// empty.
func (w *Watchers) Notify(changes []Change) {
	if len(changes) == 0 {
		return
	}
	w.mu.Lock()
	ids := make([]int, 0, len(w.fns))
	for id := range w.fns {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	fns := make([]func([]Change), len(ids))
	for i, id := range ids {
		fns[i] = w.fns[id]
	}
	w.mu.Unlock()
	for _, fn := range fns {
		fn(changes)
	}
}

// MemStore is a Store in memory, for tests and ephemeral brokers.
type MemStore struct {
	// mu serializes writers, and their notifications with them.
	mu       sync.Mutex
	dataMu   sync.RWMutex                // guards acls for All without mu
	acls     map[ResourcePattern][]Entry // in SortEntries form
	watchers Watchers
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore { return &MemStore{acls: map[ResourcePattern][]Entry{}} }

// Add implements Store.
func (m *MemStore) Add(_ context.Context, bindings []Binding) error {
	groups, err := GroupByPattern(bindings)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var changes []Change
	m.dataMu.Lock()
	for p, added := range groups {
		merged, changed := Merge(m.acls[p], added)
		if changed {
			m.acls[p] = merged
			changes = append(changes, Change{Pattern: p, Entries: merged})
		}
	}
	m.dataMu.Unlock()
	m.watchers.Notify(changes)
	return nil
}

// Remove implements Store.
func (m *MemStore) Remove(_ context.Context, f Filter) ([]Binding, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var removed []Binding
	var changes []Change
	m.dataMu.Lock()
	for p, entries := range m.acls {
		if !f.Pattern.Matches(p) {
			continue
		}
		kept := entries[:0:0]
		for _, e := range entries {
			if f.Entry.Matches(e) {
				removed = append(removed, Binding{p, e})
			} else {
				kept = append(kept, e)
			}
		}
		if len(kept) == len(entries) {
			continue
		}
		if len(kept) == 0 {
			delete(m.acls, p)
		} else {
			m.acls[p] = kept
		}
		changes = append(changes, Change{Pattern: p, Entries: kept})
	}
	m.dataMu.Unlock()
	m.watchers.Notify(changes)
	return removed, nil
}

// All implements Store.
func (m *MemStore) All(context.Context) ([]Binding, error) {
	m.dataMu.RLock()
	var out []Binding
	for p, entries := range m.acls {
		for _, e := range entries {
			out = append(out, Binding{p, e})
		}
	}
	m.dataMu.RUnlock()
	SortBindings(out)
	return out, nil
}

// Watch implements Store.
func (m *MemStore) Watch(fn func([]Change)) (cancel func()) { return m.watchers.Add(fn) }

var _ Store = (*MemStore)(nil)
