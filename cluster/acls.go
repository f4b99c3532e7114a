package cluster

// ACLs in ZooKeeper, in the layout of Kafka's AclAuthorizer (ZooKeeper
// mode), so kafka-acls.sh --authorizer-properties zookeeper.connect=...
// and a Kafka broker read and write the same ACLs. Below the chroot:
//
//	/kafka-acl/<Type>/<name>                       persistent, LITERAL pattern ("*" included)
//	/kafka-acl-extended/prefixed/<Type>/<name>     persistent, PREFIXED pattern
//	/kafka-acl-changes/acl_changes_<seq>           persistent sequential, "TOPIC:<name>"
//	/kafka-acl-extended-changes/acl_changes_<seq>  persistent sequential, {"version":1,"resourceType":...}
//
// <Type> is acl.ResourceType's name ("Topic", "TransactionalId"). The
// znode and notification formats are acl.MarshalZNode and acl.MarshalChange.
//
// A write reads the pattern's znode, computes the new set, and writes it
// back guarded by the version it read (create when absent, delete when
// the set becomes empty); on a conflict with another broker it reads
// again and retries, as Kafka's updateResourceAcls does. It then creates a
// change notification. Every broker's ACLStore watches both notification
// directories, re-reads the znode of each pattern named by a new
// notification and reports the change to its watchers; it re-reads
// everything after a broken watch. Handled notifications older than
// Options.ConfigChangeExpiration (15 minutes) are deleted, as Kafka's
// ZkNodeChangeNotificationListener does.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/sluice/sluice/acl"
)

// Part of Kafka's ZooKeeper layout: do not change.
const (
	aclLiteralPath         = "/kafka-acl"
	aclPrefixedPath        = "/kafka-acl-extended/prefixed"
	aclChangesPath         = "/kafka-acl-changes"
	aclExtendedChangesPath = "/kafka-acl-extended-changes"
	aclChangePrefix        = "acl_changes_"
)

// aclMaxAttempts bounds the read-modify-write attempts of one pattern
// under contention (Kafka tries 11 times with 100-150 ms pauses; ours
// pause less and try more).
const aclMaxAttempts = 50

// aclTypes are the resource types whose directories Kafka creates.
var aclTypes = []acl.ResourceType{acl.ResourceTopic, acl.ResourceGroup, acl.ResourceCluster,
	acl.ResourceTransactionalID, acl.ResourceDelegationToken, acl.ResourceUser}

// aclRoot is the directory of a pattern type's ACL znodes.
func aclRoot(pt acl.PatternType) string {
	if pt == acl.PatternLiteral {
		return aclLiteralPath
	}
	return aclPrefixedPath
}

func aclZNodePath(p acl.ResourcePattern) string {
	return aclRoot(p.PatternType) + "/" + p.Type.String() + "/" + p.Name
}

// ACLStore is the cluster-mode acl.Store: ACLs in ZooKeeper in Kafka's
// layout (top of acls.go), shared by every broker. All and Remove with a
// filter that is not exact (acl.PatternFilter.Exact) work from the
// store's cache: everything loaded at open, kept current by the change
// notifications (as Kafka's authorizer works from its aclCache). Watch
// reports changes made by this broker when they are written and changes
// by other brokers when their notification arrives, normally within a
// second. Safe for concurrent use.
type ACLStore struct {
	n      *Node
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mu serializes reads-then-reports of znodes (writes, notifications,
	// reloads), so watchers see each pattern's states in the order this
	// broker observed them.
	mu       sync.Mutex
	watchers acl.Watchers

	cacheMu sync.RWMutex
	cache   map[acl.ResourcePattern][]acl.Entry // in SortEntries form; REQUIRES: mu held to write
}

var _ acl.Store = (*ACLStore)(nil)

// OpenACLStore creates Kafka's ACL paths when missing, loads every ACL
// and starts watching the change notifications until Close (of the store
// or of the node).
func (n *Node) OpenACLStore() (*ACLStore, error) {
	s := &ACLStore{n: n, cache: map[acl.ResourcePattern][]acl.Entry{}}
	s.ctx, s.cancel = context.WithCancel(n.ctx)
	var paths []string
	for _, root := range []string{aclLiteralPath, aclPrefixedPath} {
		for _, t := range aclTypes {
			paths = append(paths, root+"/"+t.String())
		}
	}
	paths = append(paths, aclChangesPath, aclExtendedChangesPath)
	for _, p := range paths {
		if err := n.zk.ensurePath(p); err != nil {
			s.cancel()
			return nil, fmt.Errorf("cluster: create %s: %w", p, err)
		}
	}
	// List the notifications before loading, so one written meanwhile is
	// handled (again) rather than missed.
	lasts := make([]int64, 2)
	for i, dir := range []string{aclChangesPath, aclExtendedChangesPath} {
		names, err := n.zk.children(dir)
		if err != nil {
			s.cancel()
			return nil, fmt.Errorf("cluster: list %s: %w", dir, err)
		}
		lasts[i] = maxChangeSeq(aclChangePrefix, names)
	}
	if err := s.reload(); err != nil {
		s.cancel()
		return nil, err
	}
	for i, dir := range []string{aclChangesPath, aclExtendedChangesPath} {
		s.wg.Add(1)
		go s.watchChanges(dir, i == 1, lasts[i])
	}
	return s, nil
}

// Close stops watching. The node's ZooKeeper session is the node's.
func (s *ACLStore) Close() error {
	s.cancel()
	s.wg.Wait()
	return nil
}

// Add implements acl.Store. A name containing '/' (or that ZooKeeper
// refuses in a path, such as "." or "..") is an error wrapping
// acl.ErrInvalid, as in Kafka's ZooKeeper mode.
func (s *ACLStore) Add(ctx context.Context, bindings []acl.Binding) error {
	groups, err := acl.GroupByPattern(bindings)
	if err != nil {
		return err
	}
	for p := range groups {
		if err := validZNodeName(p.Name); err != nil {
			return err
		}
	}
	patterns := make([]acl.ResourcePattern, 0, len(groups))
	for p := range groups {
		patterns = append(patterns, p)
	}
	slices.SortFunc(patterns, acl.ComparePatterns)
	s.mu.Lock()
	defer s.mu.Unlock()
	var changes []acl.Change
	defer func() { s.watchers.Notify(changes) }()
	for _, p := range patterns {
		_, merged, changed, err := s.update(ctx, p, func(cur []acl.Entry) ([]acl.Entry, bool) {
			return acl.Merge(cur, groups[p])
		})
		if err != nil {
			return err
		}
		if c, ok := s.cacheLocked(p, merged); ok {
			changes = append(changes, c)
		}
		if changed {
			s.notifyChange(p)
		}
	}
	return nil
}

// Remove implements acl.Store.
func (s *ACLStore) Remove(ctx context.Context, f acl.Filter) ([]acl.Binding, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	patterns, exact := f.Pattern.Exact()
	if !exact {
		s.cacheMu.RLock()
		for p := range s.cache {
			if f.Pattern.Matches(p) {
				patterns = append(patterns, p)
			}
		}
		s.cacheMu.RUnlock()
	}
	slices.SortFunc(patterns, acl.ComparePatterns)
	s.mu.Lock()
	defer s.mu.Unlock()
	var removed []acl.Binding
	var changes []acl.Change
	defer func() { s.watchers.Notify(changes) }()
	for _, p := range patterns {
		if validZNodeName(p.Name) != nil {
			continue // cannot be stored, so nothing to remove
		}
		old, kept, changed, err := s.update(ctx, p, func(cur []acl.Entry) ([]acl.Entry, bool) {
			kept := slices.DeleteFunc(slices.Clone(cur), f.Entry.Matches)
			return kept, len(kept) != len(cur)
		})
		if err != nil {
			return removed, err
		}
		if c, ok := s.cacheLocked(p, kept); ok {
			changes = append(changes, c)
		}
		if changed {
			for _, e := range old {
				if f.Entry.Matches(e) {
					removed = append(removed, acl.Binding{Pattern: p, Entry: e})
				}
			}
			s.notifyChange(p)
		}
	}
	return removed, nil
}

// All implements acl.Store, from the cache.
func (s *ACLStore) All(context.Context) ([]acl.Binding, error) {
	s.cacheMu.RLock()
	var out []acl.Binding
	for p, es := range s.cache {
		for _, e := range es {
			out = append(out, acl.Binding{Pattern: p, Entry: e})
		}
	}
	s.cacheMu.RUnlock()
	acl.SortBindings(out)
	return out, nil
}

// Watch implements acl.Store.
func (s *ACLStore) Watch(fn func([]acl.Change)) (cancel func()) { return s.watchers.Add(fn) }

// update applies fn to the entries stored for p, writing the result back
// guarded by the znode version and retrying on a conflict. It returns the
// entries read by the attempt that succeeded, what it wrote (or found
// unchanged), and whether it wrote. REQUIRES: s.mu held.
func (s *ACLStore) update(ctx context.Context, p acl.ResourcePattern, fn func([]acl.Entry) ([]acl.Entry, bool)) (old, next []acl.Entry, changed bool, err error) {
	zpath := aclZNodePath(p)
	for attempt := 1; ; attempt++ {
		cur, version, err := s.read(p)
		if err != nil {
			return nil, nil, false, err
		}
		next, changed := fn(cur)
		if !changed {
			return cur, cur, false, nil
		}
		switch {
		case len(next) == 0:
			err = s.n.zk.delete(zpath, version)
			if errors.Is(err, zk.ErrNoNode) {
				err = nil
			}
		case version >= 0:
			_, err = s.n.zk.set(zpath, acl.MarshalZNode(next), version)
		default:
			_, err = s.n.zk.createParents(zpath, acl.MarshalZNode(next), 0)
		}
		if err == nil {
			return cur, next, true, nil
		}
		if errors.Is(err, zk.ErrInvalidPath) {
			return nil, nil, false, fmt.Errorf("%w: resource name %q: %v", acl.ErrInvalid, p.Name, err)
		}
		if !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNodeExists) && !errors.Is(err, zk.ErrNoNode) {
			return nil, nil, false, fmt.Errorf("cluster: write %s: %w", zpath, err)
		}
		if attempt >= aclMaxAttempts {
			return nil, nil, false, fmt.Errorf("cluster: write %s: %d conflicting updates in a row: %w", zpath, attempt, err)
		}
		// Another broker wrote it between our read and write: read again.
		select {
		case <-time.After(time.Duration(10+rand.IntN(40)) * time.Millisecond):
		case <-ctx.Done():
			return nil, nil, false, ctx.Err()
		case <-s.ctx.Done():
			return nil, nil, false, ErrClosed
		}
	}
}

// read returns the entries of p's znode and its version (-1: absent).
func (s *ACLStore) read(p acl.ResourcePattern) ([]acl.Entry, int32, error) {
	zpath := aclZNodePath(p)
	data, stat, err := s.n.zk.get(zpath)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, -1, nil
	}
	if errors.Is(err, zk.ErrInvalidPath) {
		return nil, -1, fmt.Errorf("%w: resource name %q: %v", acl.ErrInvalid, p.Name, err)
	}
	if err != nil {
		return nil, -1, fmt.Errorf("cluster: read %s: %w", zpath, err)
	}
	es, err := acl.UnmarshalZNode(data)
	if err != nil {
		return nil, -1, fmt.Errorf("%w: %s: %w", ErrCorruptZnode, zpath, err)
	}
	return es, stat.Version, nil
}

// notifyChange writes the change notification of p. A failure is logged,
// not returned: the ACLs are written, and brokers that miss the change
// re-read everything when their watch breaks (as after the outage that
// made this fail).
func (s *ACLStore) notifyChange(p acl.ResourcePattern) {
	data, extended := acl.MarshalChange(p)
	dir := aclChangesPath
	if extended {
		dir = aclExtendedChangesPath
	}
	if _, err := s.n.zk.createParents(dir+"/"+aclChangePrefix, data, zk.FlagSequence); err != nil {
		s.n.log.Warn("cluster: acl change notification", "pattern", p.String(), "err", err)
	}
}

// cacheLocked records entries as p's state and returns the change to
// report, ok false when the cache already had it. REQUIRES: s.mu held.
func (s *ACLStore) cacheLocked(p acl.ResourcePattern, entries []acl.Entry) (acl.Change, bool) {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	if slices.Equal(s.cache[p], entries) {
		return acl.Change{}, false
	}
	if len(entries) == 0 {
		delete(s.cache, p)
	} else {
		s.cache[p] = entries
	}
	return acl.Change{Pattern: p, Entries: entries}, true
}

// refresh re-reads p (named by a notification) and reports a change.
func (s *ACLStore) refresh(p acl.ResourcePattern) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	es, _, err := s.read(p)
	if err != nil {
		return err
	}
	if c, ok := s.cacheLocked(p, es); ok {
		s.watchers.Notify([]acl.Change{c})
	}
	return nil
}

// reload reads every ACL znode and reports every difference from the
// cache. Directories of resource types this broker does not know are
// skipped with a warning, as Kafka does.
func (s *ACLStore) reload() error {
	all := map[acl.ResourcePattern][]acl.Entry{}
	for _, pt := range []acl.PatternType{acl.PatternLiteral, acl.PatternPrefixed} {
		root := aclRoot(pt)
		types, err := s.n.zk.children(root)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("cluster: list %s: %w", root, err)
		}
		for _, tname := range types {
			rt, ok := acl.ParseResourceType(tname)
			if !ok || !rt.Concrete() {
				s.n.log.Warn("cluster: ignoring acls of unknown resource type", "path", root+"/"+tname)
				continue
			}
			names, err := s.n.zk.children(root + "/" + tname)
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				return fmt.Errorf("cluster: list %s/%s: %w", root, tname, err)
			}
			for _, name := range names {
				p := acl.ResourcePattern{Type: rt, Name: name, PatternType: pt}
				es, _, err := s.read(p)
				if err != nil {
					return err
				}
				if len(es) > 0 {
					all[p] = es
				}
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var changes []acl.Change
	s.cacheMu.RLock()
	var gone []acl.ResourcePattern
	for p := range s.cache {
		if _, ok := all[p]; !ok {
			gone = append(gone, p)
		}
	}
	s.cacheMu.RUnlock()
	for _, p := range gone {
		if c, ok := s.cacheLocked(p, nil); ok {
			changes = append(changes, c)
		}
	}
	for p, es := range all {
		if c, ok := s.cacheLocked(p, es); ok {
			changes = append(changes, c)
		}
	}
	slices.SortFunc(changes, func(a, b acl.Change) int { return acl.ComparePatterns(a.Pattern, b.Pattern) })
	s.watchers.Notify(changes)
	return nil
}

// watchChanges handles the notifications in dir with a sequence number
// above last, then every new one, until the store or node closes
// (Node.watchChanges). After a failed listing, a lost watch (session
// expiry) or a notification it could not read or apply, it reloads
// everything before going on, since notifications may have been purged
// meanwhile.
func (s *ACLStore) watchChanges(dir string, extended bool, last int64) {
	defer s.wg.Done()
	s.n.watchChanges(s.ctx, changeWatch{
		dir:    dir,
		prefix: aclChangePrefix,
		last:   last,
		handle: func(znode string, data []byte) error {
			p, err := acl.UnmarshalChange(data, extended)
			if err != nil {
				s.n.log.Warn("cluster: bad acl change notification", "znode", znode, "err", err)
				return nil
			}
			if err := s.refresh(p); err != nil {
				return fmt.Errorf("reload acls of %s: %w", p, err)
			}
			return nil
		},
		resync: s.reload,
	})
}

// validZNodeName refuses names that cannot be one path component.
func validZNodeName(name string) error {
	if strings.Contains(name, "/") || name == "." || name == ".." {
		return fmt.Errorf("%w: resource name %q cannot be stored in ZooKeeper", acl.ErrInvalid, name)
	}
	return nil
}
