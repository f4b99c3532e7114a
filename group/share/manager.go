package share

import "sync"

// Key names a share partition: a share group's view of one topic partition.
type Key struct {
	Group     string
	Topic     [16]byte
	Partition int32
}

// Held is a share partition with its lock. REQUIRES: mu held for every
// call on P.
type Held struct {
	mu sync.Mutex
	P  *Partition
}

// Lock and Unlock guard P.
func (h *Held) Lock()   { h.mu.Lock() }
func (h *Held) Unlock() { h.mu.Unlock() }

// Manager is the set of share partitions a broker leads, with a broadcast
// of changes so that long-polling fetches wake when records become available
// (released, lock expired, acknowledged past the in-flight bound). Safe for
// concurrent use.
type Manager struct {
	mu      sync.Mutex
	parts   map[Key]*Held
	changed chan struct{} // closed and replaced by Notify
}

// NewManager returns an empty manager.
func NewManager() *Manager {
	return &Manager{parts: map[Key]*Held{}, changed: make(chan struct{})}
}

// Get returns the share partition of k, creating it with create (which may
// read persisted state or the log; it runs under the manager's lock, so it
// must not call back into the manager) when absent. create returning nil
// leaves it absent and Get returns nil.
func (m *Manager) Get(k Key, create func() *Partition) *Held {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h := m.parts[k]; h != nil {
		return h
	}
	if create == nil {
		return nil
	}
	p := create()
	if p == nil {
		return nil
	}
	h := &Held{P: p}
	m.parts[k] = h
	return h
}

// Lookup returns the share partition of k, nil when absent.
func (m *Manager) Lookup(k Key) *Held { return m.Get(k, nil) }

// Remove forgets k (the group or topic was deleted, the partition moved).
func (m *Manager) Remove(k Key) {
	m.mu.Lock()
	delete(m.parts, k)
	m.mu.Unlock()
}

// Each calls f for every share partition of group ("" for all groups). f
// runs without the manager's lock held and takes the partition's itself.
func (m *Manager) Each(group string, f func(Key, *Held)) {
	m.mu.Lock()
	type kh struct {
		k Key
		h *Held
	}
	var all []kh
	for k, h := range m.parts {
		if group == "" || k.Group == group {
			all = append(all, kh{k, h})
		}
	}
	m.mu.Unlock()
	for _, e := range all {
		f(e.k, e.h)
	}
}

// Changed returns a channel closed at the next Notify.
func (m *Manager) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

// Notify wakes everything waiting on Changed.
func (m *Manager) Notify() {
	m.mu.Lock()
	close(m.changed)
	m.changed = make(chan struct{})
	m.mu.Unlock()
}
