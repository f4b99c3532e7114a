package engine

import (
	"fmt"
	"sort"
	"sync"
)

var (
	registryMu sync.RWMutex
	registry   = map[string]Backend{}
)

// Register makes a backend available under name (the storage.backend
// value). Backends call it from init; a duplicate name panics.
func Register(name string, b Backend) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("engine: backend registered twice: " + name)
	}
	registry[name] = b
}

// Lookup returns the backend registered under name.
func Lookup(name string) (Backend, error) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	b, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("engine: unknown storage backend %q (have %v)", name, namesLocked())
	}
	return b, nil
}

// Names lists the registered backends, sorted.
func Names() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return namesLocked()
}

// REQUIRES: registryMu held.
func namesLocked() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Open opens a store with the named backend.
func Open(name string, opts Options) (Store, error) {
	b, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	return b.Open(opts)
}
