package acl

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
)

// Config configures an Authorizer with the broker settings Kafka's
// authorizer reads.
type Config struct {
	// SuperUsers are principals allowed everything (super.users; see
	// ParseSuperUsers).
	SuperUsers []string
	// AllowEveryoneIfNoACL is allow.everyone.if.no.acl.found: a resource
	// with no ACL at all (for any principal) is open to everyone.
	AllowEveryoneIfNoACL bool
}

// Authorizer decides requests over a cache of ACLs. Authorize is safe for
// any number of concurrent callers and never locks or allocates: it reads
// an immutable index through an atomic pointer. Load, Apply and Follow
// build a new index from the full set of ACLs and swap it in
// (copy-on-write); they are serialized among themselves, and cost O(number
// of ACLs) each, which is fine for changes made by administrators.
type Authorizer struct {
	superUsers   map[string]struct{} // immutable after New
	allowIfNoACL bool

	idx atomic.Pointer[index]

	// mu serializes writers of acls and idx.
	mu   sync.Mutex
	acls map[ResourcePattern][]Entry // REQUIRES: mu held; what idx was built from
}

// New returns an authorizer with no ACLs.
func New(cfg Config) *Authorizer {
	a := &Authorizer{allowIfNoACL: cfg.AllowEveryoneIfNoACL, acls: map[ResourcePattern][]Entry{}}
	if len(cfg.SuperUsers) > 0 {
		a.superUsers = make(map[string]struct{}, len(cfg.SuperUsers))
		for _, p := range cfg.SuperUsers {
			a.superUsers[p] = struct{}{}
		}
	}
	a.idx.Store(buildIndex(a.acls))
	return a
}

// Authorize reports whether principal ("User:alice"), connected from host,
// may perform op on the resource of type rt called name (ClusterName for
// the cluster). It implements the rules in the package comment. A host
// that is an IPv4-mapped IPv6 address is compared as IPv4; an invalid host
// matches only entries for every host. op must be a concrete operation and
// rt a concrete type; Any or Unknown is denied (unless principal is a super
// user).
//
// Authorize does not allocate and never blocks: it sees the ACLs of the
// last completed Load or Apply.
func (a *Authorizer) Authorize(principal string, host netip.Addr, op Operation, rt ResourceType, name string) bool {
	if _, ok := a.superUsers[principal]; ok {
		return true
	}
	if !rt.Concrete() || op <= OpAll || op >= numOperations {
		return false
	}
	ti := &a.idx.Load().types[rt]
	r := request{principal: principal, host: host.Unmap(), bit: 1 << op}
	if r.denies(ti.literal[name]) || r.denies(ti.wildcard) {
		return false
	}
	for _, n := range ti.prefixLens {
		if n > len(name) {
			break
		}
		if r.denies(ti.prefixed[name[:n]]) {
			return false
		}
	}
	if !r.found {
		return a.allowIfNoACL
	}
	return r.allowed
}

// AuthorizeByResourceType reports whether principal, connected from host,
// may perform op on at least one resource of type rt, whether or not it
// exists yet: Kafka's AclAuthorizer.authorizeByResourceType, which lets an
// idempotent producer with Write on some topic start (KIP-679). Only the
// entries whose operation is op or All count (no implication: an Allow of
// Read does not answer for Describe), and
//
//   - a super user is allowed;
//   - a matching Deny on the LITERAL wildcard "*" denies;
//   - with allow.everyone.if.no.acl.found, everyone else is allowed;
//   - else some matching Allow must survive the Denies: the LITERAL "*",
//     a LITERAL name with no Deny on that name and no PREFIXED Deny on a
//     prefix of it, or a PREFIXED name with no PREFIXED Deny on a prefix
//     of it (the name itself included).
//
// Like Authorize it is safe for concurrent use and does not lock or
// allocate; it costs O(ACLs of type rt).
func (a *Authorizer) AuthorizeByResourceType(principal string, host netip.Addr, op Operation, rt ResourceType) bool {
	if _, ok := a.superUsers[principal]; ok {
		return true
	}
	if !rt.Concrete() || op <= OpAll || op >= numOperations {
		return false
	}
	ti := &a.idx.Load().types[rt]
	host = host.Unmap()
	matches := func(rs []rule, deny bool) bool {
		for i := range rs {
			ru := &rs[i]
			if ru.ops != 0 && ru.deny == deny && (ru.op == op || ru.op == OpAll) &&
				(ru.anyPrincipal || ru.principal == principal) &&
				(ru.anyHost || (ru.host.IsValid() && ru.host == host)) {
				return true
			}
		}
		return false
	}
	if matches(ti.wildcard, true) {
		return false
	}
	if a.allowIfNoACL {
		return true
	}
	if matches(ti.wildcard, false) {
		return true
	}
	prefixDenied := func(name string) bool {
		for _, n := range ti.prefixLens {
			if n > len(name) {
				break
			}
			if matches(ti.prefixed[name[:n]], true) {
				return true
			}
		}
		return false
	}
	for name, rs := range ti.literal {
		if matches(rs, false) && !matches(rs, true) && !prefixDenied(name) {
			return true
		}
	}
	for name, rs := range ti.prefixed {
		if matches(rs, false) && !prefixDenied(name) {
			return true
		}
	}
	return false
}

// IsSuperUser reports whether principal is in super.users.
func (a *Authorizer) IsSuperUser(principal string) bool {
	_, ok := a.superUsers[principal]
	return ok
}

// request is one Authorize call's question and what it has learnt so far.
type request struct {
	principal string
	host      netip.Addr
	bit       opMask
	found     bool // some rule (for anyone) applies to the resource
	allowed   bool // some Allow rule matches the request
}

// denies records the rules of one pattern in r and reports whether one of
// them is a matching Deny.
func (r *request) denies(rs []rule) bool {
	if len(rs) == 0 {
		return false
	}
	r.found = true
	for i := range rs {
		ru := &rs[i]
		// A rule whose host is no address (zero ru.host) matches no
		// client, not even one without an address (zero r.host).
		if ru.ops&r.bit == 0 ||
			!(ru.anyPrincipal || ru.principal == r.principal) ||
			!(ru.anyHost || (ru.host.IsValid() && ru.host == r.host)) {
			continue
		}
		if ru.deny {
			return true
		}
		r.allowed = true
	}
	return false
}

// Load replaces every ACL with bindings. Invalid bindings are kept (they
// may have been stored by a newer broker) but an entry with an unknown
// operation or permission never matches.
func (a *Authorizer) Load(bindings []Binding) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.loadLocked(bindings)
}

// REQUIRES: a.mu held.
func (a *Authorizer) loadLocked(bindings []Binding) {
	acls := make(map[ResourcePattern][]Entry)
	for _, b := range bindings {
		acls[b.Pattern] = append(acls[b.Pattern], b.Entry)
	}
	a.acls = acls
	a.idx.Store(buildIndex(acls))
}

// Apply replaces the ACLs of each changed pattern with its new entries (a
// Change with no entries removes the pattern). It has the signature of a
// Store's watch callback.
func (a *Authorizer) Apply(changes []Change) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range changes {
		if len(c.Entries) == 0 {
			delete(a.acls, c.Pattern)
		} else {
			a.acls[c.Pattern] = slices.Clone(c.Entries)
		}
	}
	a.idx.Store(buildIndex(a.acls))
}

// Follow makes a track s: it registers Apply as a watch on s, then loads
// everything s holds, and returns the watch's cancel function. Changes
// reported while it loads wait for it, so none is lost and none is
// overwritten by the older load.
func (a *Authorizer) Follow(ctx context.Context, s Store) (cancel func(), err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	cancel = s.Watch(a.Apply)
	all, err := s.All(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	a.loadLocked(all)
	return cancel, nil
}

// Len is the number of ACL entries the authorizer decides with.
func (a *Authorizer) Len() int { return a.idx.Load().n }

// rule is an Entry compiled for matching.
type rule struct {
	principal    string
	host         netip.Addr // compared when !anyHost; the zero Addr matches no client
	ops          opMask     // operations this rule decides (grants)
	op           Operation  // the entry's own operation (AuthorizeByResourceType)
	anyPrincipal bool
	anyHost      bool
	deny         bool
}

func compile(e Entry) rule {
	r := rule{
		principal:    e.Principal,
		op:           e.Operation,
		anyPrincipal: e.Principal == WildcardPrincipal,
		anyHost:      e.Host == WildcardHost,
		deny:         e.Permission == PermissionDeny,
	}
	if e.Permission == PermissionAllow || e.Permission == PermissionDeny {
		r.ops = grants(e.Operation, e.Permission)
	}
	if !r.anyHost {
		// Kafka compares the host string with the client's
		// InetAddress.getHostAddress(); comparing parsed addresses is the
		// same test without depending on how an IPv6 address is spelled.
		// A host name never matches, as in Kafka.
		if ip, err := netip.ParseAddr(e.Host); err == nil {
			r.host = ip.Unmap()
		}
	}
	return r
}

// index is an immutable snapshot of the ACLs, organized for Authorize.
type index struct {
	types [numResourceTypes]typeIndex
	n     int // entries
}

// typeIndex holds the rules of one resource type.
//
// A resource called name is governed by literal[name], wildcard, and
// prefixed[name[:n]] for every n in prefixLens with n <= len(name).
// Invariant: prefixLens is sorted ascending, without duplicates, and holds
// exactly the lengths of the keys of prefixed; so a lookup costs one map
// probe per distinct prefix length, not per byte of the name (ACL prefixes
// in one cluster come in few lengths).
type typeIndex struct {
	literal    map[string][]rule
	wildcard   []rule
	prefixed   map[string][]rule
	prefixLens []int
}

func buildIndex(acls map[ResourcePattern][]Entry) *index {
	idx := &index{}
	for p, entries := range acls {
		if !p.Type.Concrete() || len(entries) == 0 {
			continue
		}
		ti := &idx.types[p.Type]
		rules := make([]rule, len(entries))
		for i, e := range entries {
			rules[i] = compile(e)
		}
		idx.n += len(entries)
		switch {
		case p.PatternType == PatternLiteral && p.Name == WildcardResource:
			ti.wildcard = append(ti.wildcard, rules...)
		case p.PatternType == PatternLiteral:
			if ti.literal == nil {
				ti.literal = map[string][]rule{}
			}
			ti.literal[p.Name] = rules
		case p.PatternType == PatternPrefixed:
			if ti.prefixed == nil {
				ti.prefixed = map[string][]rule{}
			}
			ti.prefixed[p.Name] = rules
			ti.prefixLens = append(ti.prefixLens, len(p.Name))
		}
	}
	for i := range idx.types {
		ti := &idx.types[i]
		slices.Sort(ti.prefixLens)
		ti.prefixLens = slices.Compact(ti.prefixLens)
	}
	return idx
}
