package replica

// A storage backend per topic (the topic config storage.backend): one log
// dir holds a store of each backend its topics use. The broker's own
// backend (the broker key storage.backend) is the store at the dir's root,
// as before topics could choose; another backend's store is opened by
// LogDir.Open, under the dir (the broker puts it in
// "<dir>/storage-<backend>", a name no partition dir can have), when the
// dir holds logs of it at start or a topic of it first places a log there.
// backendStores routes each log to the store holding it, so that the
// Manager's per-dir work (flush, checkpoints, moves between dirs) reaches
// every backend's logs.

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/sluice/sluice/engine"
)

// backendStores is one log dir's stores, one per backend in use. Safe for
// concurrent use. The stores are the caller's (the broker's): it closes
// them.
type backendStores struct {
	def  string // the backend of the store at the dir's root
	open func(backend string) (engine.Store, error)

	mu sync.Mutex
	// stores holds the store of each backend opened in the dir; def's
	// is always there.
	stores map[string]engine.Store
	// where is the store holding each log this dir holds (current and
	// future logs), learnt from ListLogs and from creations.
	where map[engine.PartitionID]engine.Store
}

// newBackendStores wraps od's stores.
func newBackendStores(od LogDir) *backendStores {
	def := od.Backend
	if def == "" {
		def = defaultBackend
	}
	b := &backendStores{def: def, open: od.Open, stores: map[string]engine.Store{def: od.Store}, where: map[engine.PartitionID]engine.Store{}}
	for name, st := range od.Others {
		if name != def && st != nil {
			b.stores[name] = st
		}
	}
	return b
}

// defaultBackend is the backend of a LogDir that names none (tests that
// hand the Manager one store).
const defaultBackend = "segment"

// storeForLocked returns the store of backend ("": the root's), opening it with
// LogDir.Open the first time. REQUIRES: b.mu held.
func (b *backendStores) storeForLocked(backend string) (engine.Store, error) {
	if backend == "" {
		backend = b.def
	}
	if st := b.stores[backend]; st != nil {
		return st, nil
	}
	if b.open == nil {
		return nil, fmt.Errorf("replica: storage backend %q: this log dir has only %q", backend, b.def)
	}
	st, err := b.open(backend)
	if err != nil {
		return nil, fmt.Errorf("replica: open the %q store of the log dir: %w", backend, err)
	}
	b.stores[backend] = st
	return st, nil
}

// CreateLog creates id's log in backend's store ("": the root's).
func (b *backendStores) CreateLog(backend string, id engine.PartitionID, cfg engine.LogConfig) (engine.Log, error) {
	b.mu.Lock()
	st, err := b.storeForLocked(backend)
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	log, err := st.CreateLog(id, cfg)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.where[id] = st
	b.mu.Unlock()
	return log, nil
}

// storeOf returns the store holding id's log (the root's when none does,
// which then answers engine.ErrNoLog), and the backend it is.
func (b *backendStores) storeOf(id engine.PartitionID) (engine.Store, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.where[id]
	if st == nil {
		return b.stores[b.def], b.def
	}
	for name, s := range b.stores {
		if s == st {
			return st, name
		}
	}
	return st, b.def
}

// BackendOf returns the backend of the store holding id's log, "" when no
// store of the dir holds it.
func (b *backendStores) BackendOf(id engine.PartitionID) string {
	b.mu.Lock()
	held := b.where[id] != nil
	b.mu.Unlock()
	if !held {
		return ""
	}
	_, name := b.storeOf(id)
	return name
}

// OpenLog opens id's log in the store holding it.
func (b *backendStores) OpenLog(id engine.PartitionID, cfg engine.LogConfig) (engine.Log, error) {
	st, _ := b.storeOf(id)
	return st.OpenLog(id, cfg)
}

// DeleteLog deletes id's log from the store holding it.
func (b *backendStores) DeleteLog(id engine.PartitionID) error {
	st, _ := b.storeOf(id)
	err := st.DeleteLog(id)
	if err == nil || errors.Is(err, engine.ErrNoLog) {
		b.mu.Lock()
		delete(b.where, id)
		b.mu.Unlock()
	}
	return err
}

// ListLogs lists the logs of every store of the dir, each once: a log
// found in two stores (a crash, or a broker whose storage.backend changed)
// is kept in the root's store, else in the first backend by name, and
// reported in dup.
func (b *backendStores) ListLogs() (ids []engine.PartitionID, dup []engine.PartitionID, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	names := make([]string, 0, len(b.stores))
	for name := range b.stores {
		if name != b.def {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	names = append([]string{b.def}, names...)
	for _, name := range names {
		st := b.stores[name]
		got, err := st.ListLogs()
		if err != nil {
			return nil, nil, fmt.Errorf("replica: list the %q logs: %w", name, err)
		}
		for _, id := range got {
			if b.where[id] != nil && b.where[id] != st {
				dup = append(dup, id)
				continue
			}
			b.where[id] = st
			ids = append(ids, id)
		}
	}
	return ids, dup, nil
}

// each calls fn with every store of the dir, the root's first.
func (b *backendStores) each(fn func(name string, st engine.Store)) {
	b.mu.Lock()
	type named struct {
		name string
		st   engine.Store
	}
	all := []named{{b.def, b.stores[b.def]}}
	for name, st := range b.stores {
		if name != b.def {
			all = append(all, named{name, st})
		}
	}
	b.mu.Unlock()
	sort.Slice(all[1:], func(i, j int) bool { return all[1+i].name < all[1+j].name })
	for _, n := range all {
		fn(n.name, n.st)
	}
}

// maintained reports whether a store of the dir is an engine.Maintainer.
func (b *backendStores) maintained() bool {
	ok := false
	b.each(func(_ string, st engine.Store) {
		if _, m := st.(engine.Maintainer); m {
			ok = true
		}
	})
	return ok
}

// FlushAll runs engine.Maintainer.FlushAll on every store that has it and
// returns the first error.
func (b *backendStores) FlushAll() error {
	var first error
	b.each(func(_ string, st engine.Store) {
		if mt, ok := st.(engine.Maintainer); ok {
			if err := mt.FlushAll(); err != nil && first == nil {
				first = err
			}
		}
	})
	return first
}

// CheckpointRecoveryPoints runs engine.Maintainer.CheckpointRecoveryPoints
// on every store that has it and returns the first error.
func (b *backendStores) CheckpointRecoveryPoints() error {
	var first error
	b.each(func(_ string, st engine.Store) {
		if mt, ok := st.(engine.Maintainer); ok {
			if err := mt.CheckpointRecoveryPoints(); err != nil && first == nil {
				first = err
			}
		}
	})
	return first
}

// HighWatermarks merges the checkpointed high watermarks of every store
// that keeps them (engine.HighWatermarkStore), each store's for the logs
// it holds.
func (b *backendStores) HighWatermarks() (map[engine.PartitionID]int64, error) {
	all := map[engine.PartitionID]int64{}
	var first error
	b.each(func(_ string, st engine.Store) {
		hs, ok := st.(engine.HighWatermarkStore)
		if !ok {
			return
		}
		hw, err := hs.HighWatermarks()
		if err != nil {
			if first == nil {
				first = err
			}
			return
		}
		b.mu.Lock()
		for id, off := range hw {
			if b.where[id] == st {
				all[id] = off
			}
		}
		b.mu.Unlock()
	})
	return all, first
}

// SaveHighWatermarks saves hw, each log's entry in the store holding it.
// Stores without engine.HighWatermarkStore keep none.
func (b *backendStores) SaveHighWatermarks(hw map[engine.PartitionID]int64) error {
	per := map[engine.Store]map[engine.PartitionID]int64{}
	b.mu.Lock()
	for id, off := range hw {
		st := b.where[id]
		if st == nil {
			continue
		}
		if per[st] == nil {
			per[st] = map[engine.PartitionID]int64{}
		}
		per[st][id] = off
	}
	b.mu.Unlock()
	var first error
	b.each(func(_ string, st engine.Store) {
		hs, ok := st.(engine.HighWatermarkStore)
		if !ok {
			return
		}
		m := per[st]
		if m == nil {
			m = map[engine.PartitionID]int64{}
		}
		if err := hs.SaveHighWatermarks(m); err != nil && first == nil {
			first = err
		}
	})
	return first
}

// canRename reports whether backend's store can rename logs
// (engine.LogRenamer), which moving a replica into the dir needs.
func (b *backendStores) canRename(backend string) bool {
	b.mu.Lock()
	st, err := b.storeForLocked(backend)
	b.mu.Unlock()
	if err != nil {
		return false
	}
	_, ok := st.(engine.LogRenamer)
	return ok
}

// RenameLog renames log from to to in the store holding from.
func (b *backendStores) RenameLog(from, to engine.PartitionID) error {
	st, _ := b.storeOf(from)
	rn, ok := st.(engine.LogRenamer)
	if !ok {
		return ErrMoveUnsupported
	}
	if err := rn.RenameLog(from, to); err != nil {
		return err
	}
	b.mu.Lock()
	delete(b.where, from)
	b.where[to] = st
	b.mu.Unlock()
	return nil
}
