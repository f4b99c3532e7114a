package group

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/errcode"
	"github.com/sluice/sluice/metastore"
)

// fakeOwner is an OwnsFunc with per-group answers and a recording Persist.
type fakeOwner struct {
	mu        sync.Mutex
	state     map[string]string // "owned", "loading"; absent: not owned
	persisted []string          // group names, one per Persist call
	tombs     int
	fail      error
}

func (f *fakeOwner) owns(g string) (bool, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch f.state[g] {
	case "owned":
		return true, false
	case "loading":
		return true, true
	}
	return false, false
}

func (f *fakeOwner) persist(_ context.Context, g string, offs map[metastore.TopicPartition]metastore.CommittedOffset, del []metastore.TopicPartition) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.persisted = append(f.persisted, g)
	f.tombs += len(del)
	return nil
}

func (f *fakeOwner) set(g, s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state[g] = s
}

func TestOwnershipHooks(t *testing.T) {
	own := &fakeOwner{state: map[string]string{}}
	e := newEnv(t, func(o *Options) { o.Owns, o.Persist = own.owns, own.persist })

	t.Run("not owned", func(t *testing.T) {
		if got := e.commit("g", "", -1, "t", 0, 1); got != kerr.NotCoordinator.Code {
			t.Fatalf("commit: %d, want NOT_COORDINATOR", got)
		}
	})
	t.Run("loading", func(t *testing.T) {
		own.set("g", "loading")
		if got := e.commit("g", "", -1, "t", 0, 1); got != kerr.CoordinatorLoadInProgress.Code {
			t.Fatalf("commit: %d, want COORDINATOR_LOAD_IN_PROGRESS", got)
		}
	})
	t.Run("owned commits persist first", func(t *testing.T) {
		own.set("g", "owned")
		if got := e.commit("g", "", -1, "t", 0, 7); got != 0 {
			t.Fatalf("commit: %d", got)
		}
		if len(own.persisted) != 1 || own.persisted[0] != "g" {
			t.Fatalf("persisted %v", own.persisted)
		}
		if got := e.fetch("g", "t", 0); got != 7 {
			t.Fatalf("fetch: %d, want 7", got)
		}
	})
	t.Run("persist failure is not applied", func(t *testing.T) {
		own.mu.Lock()
		own.fail = ErrNotCoordinator
		own.mu.Unlock()
		if got := e.commit("g", "", -1, "t", 0, 9); got != kerr.NotCoordinator.Code {
			t.Fatalf("commit: %d, want NOT_COORDINATOR", got)
		}
		own.mu.Lock()
		own.fail = errors.New("replication timed out")
		own.mu.Unlock()
		if got := e.commit("g", "", -1, "t", 0, 9); got != kerr.CoordinatorNotAvailable.Code {
			t.Fatalf("commit: %d, want COORDINATOR_NOT_AVAILABLE", got)
		}
		own.mu.Lock()
		own.fail = nil
		own.mu.Unlock()
		if got := e.fetch("g", "t", 0); got != 7 {
			t.Fatalf("fetch: %d, want 7 (failed commits not applied)", got)
		}
	})
	t.Run("unload then reload from the store", func(t *testing.T) {
		e.c.Unload(func(g string) bool { return g == "g" })
		if e.c.getGroup("g", false) != nil {
			t.Fatal("group still in memory after Unload")
		}
		// What a replay of __consumer_offsets would leave in the metastore.
		if err := e.store.CommitOffsets("g", map[metastore.TopicPartition]metastore.CommittedOffset{
			{Topic: "t", Partition: 0}: {Offset: 11, LeaderEpoch: -1},
		}); err != nil {
			t.Fatal(err)
		}
		if err := e.c.Reload(func(g string) bool { return g == "g" }); err != nil {
			t.Fatal(err)
		}
		if got := e.fetch("g", "t", 0); got != 11 {
			t.Fatalf("fetch after reload: %d, want 11", got)
		}
	})
	t.Run("delete writes tombstones", func(t *testing.T) {
		if err := e.c.deleteGroup("g"); err != nil {
			t.Fatalf("delete group: %v", err)
		}
		if own.tombs != 1 {
			t.Fatalf("tombstones: %d, want 1", own.tombs)
		}
	})
}

func TestOwnsSkipsStartupLoad(t *testing.T) {
	e := newEnv(t, nil)
	if got := e.commit("g", "", -1, "t", 0, 3); got != 0 {
		t.Fatalf("commit: %d", got)
	}
	own := &fakeOwner{state: map[string]string{"g": "owned"}}
	e.opts.Owns, e.opts.Persist = own.owns, own.persist
	e.restart()
	if got := e.fetch("g", "t", 0); got != -1 {
		t.Fatalf("fetch: %d, want -1 (nothing loaded before Reload)", got)
	}
	if err := e.c.Reload(func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if got := e.fetch("g", "t", 0); got != 3 {
		t.Fatalf("fetch after reload: %d, want 3", got)
	}
}

func TestPersistGroupHook(t *testing.T) {
	var mu sync.Mutex
	var saved []metastore.Group
	var fail error
	own := &fakeOwner{state: map[string]string{"g": "owned"}}
	e := newEnv(t, func(o *Options) {
		o.Owns, o.Persist = own.owns, own.persist
		o.PersistGroup = func(_ context.Context, sg metastore.Group, deleted bool) error {
			mu.Lock()
			defer mu.Unlock()
			if fail != nil {
				return fail
			}
			if !deleted {
				saved = append(saved, sg)
			}
			return nil
		}
	})
	ids, gen := e.stableGroup("g", 2)
	mu.Lock()
	if len(saved) == 0 || saved[len(saved)-1].State != "Stable" || saved[len(saved)-1].Generation != gen || len(saved[len(saved)-1].Members) != 2 {
		t.Fatalf("persisted %+v, want the Stable generation %d with 2 members", saved, gen)
	}
	mu.Unlock()

	// A new coordinator (after a replay) gets the members back: they keep
	// heartbeating in the same generation without a rebalance.
	e.c.Unload(func(string) bool { return true })
	if err := e.c.Reload(func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if code := e.heartbeat("g", id, gen, nil); code != 0 {
			t.Fatalf("heartbeat of %s after reload: %d", id, code)
		}
	}

	// A failed PersistGroup surfaces with its code.
	mu.Lock()
	fail = ErrNotCoordinator
	mu.Unlock()
	if got := errcode.Code(storeErr(e.c.putGroup(metastore.Group{Name: "g"}))); got != kerr.NotCoordinator.Code {
		t.Fatalf("code of a failed save: %d, want NOT_COORDINATOR", got)
	}
}

// TestListGroupsWhileLoading: while a partition led here loads, ListGroups
// answers COORDINATOR_LOAD_IN_PROGRESS instead of a partial list; once
// loaded, the list.
func TestListGroupsWhileLoading(t *testing.T) {
	var loading atomic.Bool
	loading.Store(true)
	e := newEnv(t, func(o *Options) { o.Loading = loading.Load })
	if got := e.commit("g", "", -1, "t", 0, 3); got != 0 {
		t.Fatalf("commit: %d", got)
	}
	r := kmsg.NewPtrListGroupsRequest()
	r.Version = 4
	if resp := do[*kmsg.ListGroupsResponse](e, r); resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code || len(resp.Groups) != 0 {
		t.Fatalf("while loading: code %d, groups %+v; want COORDINATOR_LOAD_IN_PROGRESS and none", resp.ErrorCode, resp.Groups)
	}
	loading.Store(false)
	if resp := do[*kmsg.ListGroupsResponse](e, r); resp.ErrorCode != 0 || len(resp.Groups) != 1 || resp.Groups[0].Group != "g" {
		t.Fatalf("loaded: code %d, groups %+v; want g", resp.ErrorCode, resp.Groups)
	}
}
