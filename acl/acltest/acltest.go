// Package acltest checks an acl.Store implementation against the
// contract documented on acl.Store. Every implementation's tests call Run,
// so the metastore, ZooKeeper and memory stores behave alike.
package acltest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/acl"
)

// Run runs the conformance tests, each on a fresh, empty store from
// newStore. Watch tests wait up to 20 s for a change to be reported.
func Run(t *testing.T, newStore func(t *testing.T) acl.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s acl.Store)
	}{
		{"AddAll", testAddAll},
		{"AddInvalid", testAddInvalid},
		{"AddOnSeparatePatterns", testAddOnSeparatePatterns},
		{"RemoveExact", testRemoveExact},
		{"RemoveAllOnPattern", testRemoveAllOnPattern},
		{"RemoveFilters", testRemoveFilters},
		{"RemoveInvalid", testRemoveInvalid},
		{"Names", testNames},
		{"Watch", testWatch},
		{"ConcurrentAdds", testConcurrentAdds},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

var ctx = context.Background()

func lit(rt acl.ResourceType, name string) acl.ResourcePattern {
	return acl.ResourcePattern{Type: rt, Name: name, PatternType: acl.PatternLiteral}
}

func pre(rt acl.ResourceType, name string) acl.ResourcePattern {
	return acl.ResourcePattern{Type: rt, Name: name, PatternType: acl.PatternPrefixed}
}

func entry(principal string, op acl.Operation, perm acl.Permission) acl.Entry {
	return acl.Entry{Principal: principal, Host: "*", Operation: op, Permission: perm}
}

var (
	allowRead  = entry("User:alice", acl.OpRead, acl.PermissionAllow)
	allowWrite = entry("User:alice", acl.OpWrite, acl.PermissionAllow)
	denyRead   = entry("User:alice", acl.OpRead, acl.PermissionDeny)
)

func bindings(p acl.ResourcePattern, es ...acl.Entry) []acl.Binding {
	out := make([]acl.Binding, len(es))
	for i, e := range es {
		out[i] = acl.Binding{Pattern: p, Entry: e}
	}
	return out
}

func mustAdd(t *testing.T, s acl.Store, bs []acl.Binding) {
	t.Helper()
	if err := s.Add(ctx, bs); err != nil {
		t.Fatalf("Add(%v): %v", bs, err)
	}
}

// expectAll checks that All returns want (sorted with acl.SortBindings).
func expectAll(t *testing.T, s acl.Store, want []acl.Binding) {
	t.Helper()
	got, err := s.All(ctx)
	if err != nil {
		t.Fatalf("All: %v", err)
	}
	want = slices.Clone(want)
	acl.SortBindings(want)
	if !slices.Equal(got, want) {
		t.Fatalf("All:\n got %v\nwant %v", got, want)
	}
}

func expectSet(t *testing.T, what string, got, want []acl.Binding) {
	t.Helper()
	got, want = slices.Clone(got), slices.Clone(want)
	acl.SortBindings(got)
	acl.SortBindings(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
	}
}

func testAddAll(t *testing.T, s acl.Store) {
	expectAll(t, s, nil)
	topic := lit(acl.ResourceTopic, "orders")
	mustAdd(t, s, bindings(topic, allowRead, allowWrite))
	mustAdd(t, s, bindings(topic, allowWrite, denyRead)) // testAddAclsOnLiteralResource
	mustAdd(t, s, bindings(topic, allowRead))            // already there: no change
	expectAll(t, s, bindings(topic, allowRead, allowWrite, denyRead))
	mustAdd(t, s, nil)
}

func testAddInvalid(t *testing.T, s acl.Store) {
	good := bindings(lit(acl.ResourceTopic, "t"), allowRead)
	for _, bad := range [][]acl.Binding{
		bindings(lit(acl.ResourceTopic, ""), allowRead),
		bindings(lit(acl.ResourceAny, "t"), allowRead),
		bindings(acl.ResourcePattern{Type: acl.ResourceTopic, Name: "t", PatternType: acl.PatternMatch}, allowRead),
		bindings(lit(acl.ResourceTopic, "t"), entry("alice", acl.OpRead, acl.PermissionAllow)),
		bindings(lit(acl.ResourceTopic, "t"), entry("User:alice", acl.OpAny, acl.PermissionAllow)),
	} {
		err := s.Add(ctx, append(slices.Clone(good), bad...))
		if !errors.Is(err, acl.ErrInvalid) {
			t.Errorf("Add(%v) = %v, want ErrInvalid", bad, err)
		}
	}
	expectAll(t, s, nil)
}

// testAddOnSeparatePatterns: literal, wildcard and prefixed patterns of
// one name are separate (testAddAclsOnWildcardResource,
// testAddAclsOnPrefixedResource).
func testAddOnSeparatePatterns(t *testing.T, s acl.Store) {
	var all []acl.Binding
	for _, p := range []acl.ResourcePattern{
		lit(acl.ResourceTopic, "foo"), pre(acl.ResourceTopic, "foo"), lit(acl.ResourceTopic, acl.WildcardResource),
		lit(acl.ResourceGroup, "foo"), lit(acl.ResourceCluster, acl.ClusterName), lit(acl.ResourceTransactionalID, "foo"),
		lit(acl.ResourceDelegationToken, "foo"), pre(acl.ResourceUser, "foo"),
	} {
		bs := bindings(p, allowRead)
		mustAdd(t, s, bs)
		all = append(all, bs...)
	}
	expectAll(t, s, all)
	removed, err := s.Remove(ctx, acl.Filter{Pattern: pre(acl.ResourceTopic, "foo").Filter(), Entry: acl.AnyEntry})
	if err != nil {
		t.Fatal(err)
	}
	expectSet(t, "removed", removed, bindings(pre(acl.ResourceTopic, "foo"), allowRead))
	expectAll(t, s, slices.DeleteFunc(all, func(b acl.Binding) bool { return b.Pattern == pre(acl.ResourceTopic, "foo") }))
}

// testRemoveExact is testDeleteAclOnWildcardResource and
// testDeleteAclOnPrefixedResource.
func testRemoveExact(t *testing.T, s acl.Store) {
	for _, p := range []acl.ResourcePattern{lit(acl.ResourceTopic, acl.WildcardResource), pre(acl.ResourceTopic, "foo-")} {
		mustAdd(t, s, bindings(p, allowRead, allowWrite))
		removed, err := s.Remove(ctx, acl.Binding{Pattern: p, Entry: allowRead}.Filter())
		if err != nil {
			t.Fatal(err)
		}
		expectSet(t, "removed", removed, bindings(p, allowRead))
		expectAll(t, s, bindings(p, allowWrite))
		removed, err = s.Remove(ctx, acl.Binding{Pattern: p, Entry: allowRead}.Filter())
		if err != nil || len(removed) != 0 {
			t.Fatalf("second Remove = %v, %v", removed, err)
		}
		if _, err := s.Remove(ctx, acl.AnyBinding); err != nil {
			t.Fatal(err)
		}
	}
}

// testRemoveAllOnPattern is testDeleteAllAclOnWildcardResource: removing
// every entry of a pattern removes the pattern.
func testRemoveAllOnPattern(t *testing.T, s acl.Store) {
	p := lit(acl.ResourceTopic, acl.WildcardResource)
	mustAdd(t, s, bindings(p, allowRead))
	removed, err := s.Remove(ctx, acl.Filter{Pattern: p.Filter(), Entry: acl.AnyEntry})
	if err != nil {
		t.Fatal(err)
	}
	expectSet(t, "removed", removed, bindings(p, allowRead))
	expectAll(t, s, nil)
	mustAdd(t, s, bindings(p, allowWrite)) // the pattern can come back
	expectAll(t, s, bindings(p, allowWrite))
}

// testRemoveFilters is the deletion half of Kafka's testAclsFilter.
func testRemoveFilters(t *testing.T, s acl.Store) {
	r1, r2 := lit(acl.ResourceTopic, "foo-1"), lit(acl.ResourceTopic, "bar-1")
	prefixed := pre(acl.ResourceTopic, "bar-")
	acl1 := acl.Binding{Pattern: r1, Entry: entry("User:alice", acl.OpRead, acl.PermissionAllow)}
	acl2 := acl.Binding{Pattern: r1, Entry: acl.Entry{Principal: "User:alice", Host: "192.168.0.1", Operation: acl.OpWrite, Permission: acl.PermissionAllow}}
	acl3 := acl.Binding{Pattern: r2, Entry: entry("User:alice", acl.OpDescribe, acl.PermissionAllow)}
	acl4 := acl.Binding{Pattern: prefixed, Entry: entry(acl.WildcardPrincipal, acl.OpRead, acl.PermissionAllow)}
	mustAdd(t, s, []acl.Binding{acl1, acl2, acl3, acl4})
	expectAll(t, s, []acl.Binding{acl1, acl2, acl3, acl4})

	name := r2.Name
	match := acl.Filter{Pattern: acl.PatternFilter{Type: acl.ResourceAny, Name: &name, PatternType: acl.PatternMatch}, Entry: acl.AnyEntry}
	baz := "baz"
	for _, step := range []struct {
		filter acl.Filter
		want   []acl.Binding
	}{
		{match, []acl.Binding{acl3, acl4}},
		{acl1.Filter(), []acl.Binding{acl1}},
		{acl.Filter{Pattern: r2.Filter(), Entry: acl.AnyEntry}, nil},
		{acl.Filter{Pattern: acl.PatternFilter{Type: acl.ResourceTopic, Name: &baz, PatternType: acl.PatternAny}, Entry: acl.AnyEntry}, nil},
	} {
		removed, err := s.Remove(ctx, step.filter)
		if err != nil {
			t.Fatal(err)
		}
		expectSet(t, "removed", removed, step.want)
	}
	expectAll(t, s, []acl.Binding{acl2})
	// Entry filters select within patterns.
	host := "192.168.0.1"
	removed, err := s.Remove(ctx, acl.Filter{Pattern: acl.AnyPattern, Entry: acl.EntryFilter{Host: &host, Operation: acl.OpAny, Permission: acl.PermissionAllow}})
	if err != nil {
		t.Fatal(err)
	}
	expectSet(t, "removed by host", removed, []acl.Binding{acl2})
	expectAll(t, s, nil)
}

func testRemoveInvalid(t *testing.T, s acl.Store) {
	_, err := s.Remove(ctx, acl.Filter{Pattern: acl.PatternFilter{Type: acl.ResourceUnknown, PatternType: acl.PatternAny}, Entry: acl.AnyEntry})
	if !errors.Is(err, acl.ErrInvalid) {
		t.Fatalf("Remove(unknown type) = %v, want ErrInvalid", err)
	}
}

// testNames stores names that are awkward for a key-value or path layout.
func testNames(t *testing.T, s acl.Store) {
	var all []acl.Binding
	for _, name := range []string{"a:b", "a.b", "a", "ab", "ünïcödé", "with space", "-", "__consumer_offsets"} {
		bs := bindings(lit(acl.ResourceGroup, name), allowRead)
		bs = append(bs, bindings(pre(acl.ResourceGroup, name), denyRead)...)
		mustAdd(t, s, bs)
		all = append(all, bs...)
	}
	expectAll(t, s, all)
	name := "ab"
	removed, err := s.Remove(ctx, acl.Filter{Pattern: acl.PatternFilter{Type: acl.ResourceGroup, Name: &name, PatternType: acl.PatternMatch}, Entry: acl.AnyEntry})
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Concat(bindings(lit(acl.ResourceGroup, "ab"), allowRead),
		bindings(pre(acl.ResourceGroup, "a"), denyRead), bindings(pre(acl.ResourceGroup, "ab"), denyRead))
	expectSet(t, "removed by match", removed, want)
}

// watcher collects what a Watch reports.
type watcher struct {
	mu     sync.Mutex
	state  map[acl.ResourcePattern][]acl.Entry
	signal chan struct{}
}

func newWatcher(s acl.Store) (*watcher, func()) {
	w := &watcher{state: map[acl.ResourcePattern][]acl.Entry{}, signal: make(chan struct{}, 1)}
	cancel := s.Watch(func(changes []acl.Change) {
		w.mu.Lock()
		for _, c := range changes {
			w.state[c.Pattern] = slices.Clone(c.Entries)
		}
		w.mu.Unlock()
		select {
		case w.signal <- struct{}{}:
		default:
		}
	})
	return w, cancel
}

// await waits until the watcher's view of p is want (nil: no entries).
func (w *watcher) await(t *testing.T, p acl.ResourcePattern, want []acl.Entry) {
	t.Helper()
	want = acl.SortEntries(slices.Clone(want))
	deadline := time.After(20 * time.Second)
	for {
		w.mu.Lock()
		got := w.state[p]
		w.mu.Unlock()
		if slices.Equal(acl.SortEntries(slices.Clone(got)), want) {
			return
		}
		select {
		case <-w.signal:
		case <-deadline:
			t.Fatalf("watch of %v: have %v, want %v", p, got, want)
		}
	}
}

func testWatch(t *testing.T, s acl.Store) {
	w, cancel := newWatcher(s)
	defer cancel()
	p, q := lit(acl.ResourceTopic, "orders"), pre(acl.ResourceGroup, "team-")
	mustAdd(t, s, bindings(p, allowRead))
	w.await(t, p, []acl.Entry{allowRead})
	mustAdd(t, s, slices.Concat(bindings(p, denyRead), bindings(q, allowWrite)))
	w.await(t, p, []acl.Entry{allowRead, denyRead})
	w.await(t, q, []acl.Entry{allowWrite})
	if _, err := s.Remove(ctx, acl.Filter{Pattern: p.Filter(), Entry: acl.AnyEntry}); err != nil {
		t.Fatal(err)
	}
	w.await(t, p, nil)
	w.await(t, q, []acl.Entry{allowWrite})
}

// testConcurrentAdds: concurrent Adds to one pattern lose nothing (the
// conditional update of a shared store retries on conflict).
func testConcurrentAdds(t *testing.T, s acl.Store) {
	p := lit(acl.ResourceTopic, "contended")
	var wg sync.WaitGroup
	var want []acl.Binding
	errs := make(chan error, 8)
	for i := range 8 {
		b := acl.Binding{Pattern: p, Entry: entry("User:u"+string(rune('a'+i)), acl.OpWrite, acl.PermissionAllow)}
		want = append(want, b)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.Add(ctx, []acl.Binding{b})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	expectAll(t, s, want)
}
