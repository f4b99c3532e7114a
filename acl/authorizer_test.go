package acl

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
)

// check is one Authorize question and its expected answer.
type check struct {
	principal string
	host      string
	op        Operation
	rt        ResourceType
	name      string
	want      bool
}

func (c check) String() string {
	return fmt.Sprintf("%s@%s %v %v:%q", c.principal, c.host, c.op, c.rt, c.name)
}

const topic = "foo-3f1c"

// TestAuthorize holds the cases of Kafka's AclAuthorizerTest (AuthorizerTest
// in Kafka 3.x, run against both authorizers there), rewritten as tables.
func TestAuthorize(t *testing.T) {
	host1, host2 := "192.168.1.1", "192.168.1.2"
	tests := []struct {
		name     string
		cfg      Config
		bindings []Binding
		checks   []check
	}{
		{
			name: "topic acl", // testTopicAcl
			bindings: bind(lit(ResourceTopic, topic),
				allow(alice, host1, OpRead),
				allow(alice, host2, OpRead),
				deny(alice, host1, OpRead),
				allow(alice, host1, OpWrite),
				allow(alice, "*", OpDescribe),
				allow("User:rob", "*", OpRead),
				allow("User:batman", "*", OpWrite)),
			checks: []check{
				{alice, host2, OpRead, ResourceTopic, topic, true},
				{alice, host1, OpRead, ResourceTopic, topic, false}, // deny acl
				{alice, host1, OpWrite, ResourceTopic, topic, true},
				{alice, host2, OpWrite, ResourceTopic, topic, false}, // no allow from host2
				{alice, host1, OpDescribe, ResourceTopic, topic, true},
				{alice, host2, OpDescribe, ResourceTopic, topic, true},
				{alice, host1, OpAlter, ResourceTopic, topic, false},
				{alice, host2, OpAlter, ResourceTopic, topic, false},
				{"User:rob", host1, OpDescribe, ResourceTopic, topic, true},    // Read implies Describe
				{"User:batman", host1, OpDescribe, ResourceTopic, topic, true}, // Write implies Describe
				{"User:rob", host1, OpRead, ResourceTopic, topic, true},
				{"User:batman", host1, OpWrite, ResourceTopic, topic, true},
				{"User:rob", host1, OpWrite, ResourceTopic, topic, false},
				{alice, host2, OpRead, ResourceTopic, "other", false}, // ACLs of another topic
			},
		},
		{
			name: "deny takes precedence", // testDenyTakesPrecedence
			bindings: bind(lit(ResourceTopic, topic),
				allow(WildcardPrincipal, "*", OpAll),
				deny(alice, "192.168.2.1", OpAll)),
			checks: []check{
				{alice, "192.168.2.1", OpRead, ResourceTopic, topic, false},
				{alice, "192.168.2.2", OpRead, ResourceTopic, topic, true},
				{bob, "192.168.2.1", OpRead, ResourceTopic, topic, true},
			},
		},
		{
			name:     "allow all access", // testAllowAllAccess
			bindings: bind(lit(ResourceTopic, topic), allow(WildcardPrincipal, "*", OpAll)),
			checks: []check{
				{"User:random", "192.0.4.4", OpRead, ResourceTopic, topic, true},
				{"User:random", "192.0.4.4", OpIdempotentWrite, ResourceTopic, topic, true},
			},
		},
		{
			name:     "super users", // testSuperUserHasAccess
			cfg:      Config{SuperUsers: []string{"User:superuser1", "User:superuser2"}},
			bindings: bind(lit(ResourceTopic, topic), deny(WildcardPrincipal, "*", OpAll)),
			checks: []check{
				{"User:superuser1", "192.0.4.4", OpRead, ResourceTopic, topic, true},
				{"User:superuser2", "192.0.4.4", OpRead, ResourceTopic, topic, true},
				{"User:superuser2", "192.0.4.4", OpClusterAction, ResourceCluster, ClusterName, true},
				{alice, "192.0.4.4", OpRead, ResourceTopic, topic, false},
				{"Group:superuser1", "192.0.4.4", OpRead, ResourceTopic, topic, false}, // principal type matters
			},
		},
		{
			name: "wildcard resource", // testWildCardAcls
			bindings: slices.Concat(
				bind(lit(ResourceTopic, WildcardResource), allow(alice, "192.168.3.1", OpRead)),
				bind(lit(ResourceTopic, topic), allow(alice, "192.168.3.1", OpWrite)),
				bind(lit(ResourceTopic, WildcardResource), deny(alice, "192.168.3.1", OpWrite))),
			checks: []check{
				{alice, "192.168.3.1", OpRead, ResourceTopic, topic, true},
				{alice, "192.168.3.1", OpRead, ResourceTopic, "any-topic", true},
				{alice, "192.168.3.1", OpWrite, ResourceTopic, topic, false}, // deny on * wins
				{alice, "192.168.3.1", OpRead, ResourceGroup, topic, false},  // * is per type
			},
		},
		{
			name:     "wildcard resource with empty name", // testAuthorizeWithEmptyResourceName
			bindings: bind(lit(ResourceGroup, WildcardResource), allow(alice, "*", OpRead)),
			checks:   []check{{alice, host1, OpRead, ResourceGroup, "", true}},
		},
		{
			name:   "no acl found denies", // testNoAclFound
			checks: []check{{alice, host1, OpRead, ResourceTopic, topic, false}},
		},
		{
			name:     "allow.everyone.if.no.acl.found", // testNoAclFoundOverride
			cfg:      Config{AllowEveryoneIfNoACL: true},
			bindings: bind(lit(ResourceTopic, "guarded"), allow(bob, "*", OpRead)),
			checks: []check{
				{alice, host1, OpRead, ResourceTopic, topic, true},
				{alice, host1, OpRead, ResourceGroup, "g", true},
				// Once a resource has any ACL, only ACLs decide.
				{alice, host1, OpRead, ResourceTopic, "guarded", false},
				{bob, host1, OpRead, ResourceTopic, "guarded", true},
				{bob, host1, OpWrite, ResourceTopic, "guarded", false},
			},
		},
		{
			name:     "allow.everyone.if.no.acl.found and a prefixed acl",
			cfg:      Config{AllowEveryoneIfNoACL: true},
			bindings: bind(pre(ResourceTopic, "fo"), allow(bob, "*", OpRead)),
			checks: []check{
				{alice, host1, OpRead, ResourceTopic, topic, false},
				{alice, host1, OpRead, ResourceTopic, "bar", true},
			},
		},
		{
			name:     "allow on prefixed", // testAccessAllowedIfAllowAclExistsOnPrefixedResource
			bindings: bind(pre(ResourceTopic, "foo-"), allow(alice, "*", OpRead)),
			checks: []check{
				{alice, host1, OpRead, ResourceTopic, topic, true},
				{alice, host1, OpRead, ResourceTopic, "foo-", true},
				{alice, host1, OpRead, ResourceTopic, "foo", false},
				{alice, host1, OpRead, ResourceTopic, "xfoo-", false},
				{alice, host1, OpRead, ResourceGroup, topic, false},
			},
		},
		{
			name: "prefixed among many denies", // testAuthorizeWithPrefixedResource
			bindings: slices.Concat(
				bind(lit(ResourceTopic, "a_other"), deny(alice, "*", OpRead)),
				bind(pre(ResourceTopic, "a_other"), deny(alice, "*", OpRead)),
				bind(pre(ResourceTopic, "foo-5a7f"), deny(alice, "*", OpRead)),
				bind(pre(ResourceTopic, "foo-99e1"), deny(alice, "*", OpRead)),
				bind(pre(ResourceTopic, "foo-3f1c-zzz"), deny(alice, "*", OpRead)),
				bind(pre(ResourceTopic, "fooo-3f1c"), deny(alice, "*", OpRead)),
				bind(pre(ResourceTopic, "fo-3f1c"), deny(alice, "*", OpRead)),
				bind(pre(ResourceTopic, "fop-3f1c"), deny(alice, "*", OpRead)),
				bind(pre(ResourceTopic, "fon-3f1c"), deny(alice, "*", OpRead)),
				bind(pre(ResourceTopic, "fon-"), deny(alice, "*", OpRead)),
				bind(pre(ResourceTopic, "z_other"), deny(alice, "*", OpRead)),
				bind(lit(ResourceTopic, "z_other"), deny(alice, "*", OpRead)),
				bind(pre(ResourceTopic, "foo-"), allow(alice, "*", OpRead))),
			checks: []check{
				{alice, host1, OpRead, ResourceTopic, topic, true},
				{alice, host1, OpRead, ResourceTopic, "foo-3f1c-zzz1", false},
				{alice, host1, OpRead, ResourceTopic, "fon-x", false},
			},
		},
		{
			name: "single character names", // testSingleCharacterResourceAcls
			bindings: slices.Concat(
				bind(lit(ResourceTopic, "f"), allow(alice, "*", OpRead)),
				bind(pre(ResourceTopic, "_"), allow(alice, "*", OpRead))),
			checks: []check{
				{alice, host1, OpRead, ResourceTopic, "f", true},
				{alice, host1, OpRead, ResourceTopic, "foo", false},
				{alice, host1, OpRead, ResourceTopic, "_foo", true},
				{alice, host1, OpRead, ResourceTopic, "_", true},
				{alice, host1, OpRead, ResourceTopic, "foo_", false},
			},
		},
		{
			name: "prefixed deny beats literal allow",
			bindings: slices.Concat(
				bind(lit(ResourceTopic, "payments.eu"), allow(alice, "*", OpWrite)),
				bind(pre(ResourceTopic, "payments."), deny(WildcardPrincipal, "*", OpWrite))),
			checks: []check{
				{alice, host1, OpWrite, ResourceTopic, "payments.eu", false},
				{alice, host1, OpDescribe, ResourceTopic, "payments.eu", true},
			},
		},
		{
			name: "deny describe does not deny read", // testImplicationsOfDeny(DESCRIBE)
			bindings: bind(lit(ResourceTopic, topic),
				deny(alice, "*", OpDescribe), allow(alice, "*", OpRead)),
			checks: []check{
				{alice, host1, OpRead, ResourceTopic, topic, true},
				{alice, host1, OpDescribe, ResourceTopic, topic, false},
			},
		},
		{
			name: "wildcard principal",
			bindings: bind(lit(ResourceGroup, "g1"),
				allow(WildcardPrincipal, "*", OpRead), deny(bob, "*", OpRead)),
			checks: []check{
				{alice, host1, OpRead, ResourceGroup, "g1", true},
				{"User:CN=client,O=acme", host1, OpRead, ResourceGroup, "g1", true},
				{bob, host1, OpRead, ResourceGroup, "g1", false},
				{alice, host1, OpDelete, ResourceGroup, "g1", false},
			},
		},
		{
			name: "host match",
			bindings: bind(lit(ResourceTopic, topic),
				allow(alice, "10.0.0.1", OpRead),
				allow(alice, "0:0:0:0:0:0:0:1", OpWrite), // Java's spelling of ::1
				allow(alice, "fe80::1%eth0", OpAlter),
				allow(alice, "broker.example.com", OpDelete)), // a name never matches, as in Kafka
			checks: []check{
				{alice, "10.0.0.1", OpRead, ResourceTopic, topic, true},
				{alice, "::ffff:10.0.0.1", OpRead, ResourceTopic, topic, true},
				{alice, "10.0.0.2", OpRead, ResourceTopic, topic, false},
				{alice, "::1", OpWrite, ResourceTopic, topic, true},
				{alice, "127.0.0.1", OpWrite, ResourceTopic, topic, false},
				{alice, "fe80::1%eth0", OpAlter, ResourceTopic, topic, true},
				{alice, "fe80::1", OpAlter, ResourceTopic, topic, false},
				{alice, "10.0.0.1", OpDelete, ResourceTopic, topic, false},
				{alice, "", OpRead, ResourceTopic, topic, false}, // no address
			},
		},
		{
			// A host that is not an address compiles to the zero Addr, which
			// is also what a request without an address (a non-IP
			// connection) carries: the two must not match.
			name: "host name never matches a request without an address",
			cfg:  Config{AllowEveryoneIfNoACL: true},
			bindings: slices.Concat(
				bind(lit(ResourceTopic, topic),
					allow(alice, "broker.example.com", OpDelete),
					allow(alice, "", OpAlter),
					allow(bob, "*", OpRead)),
				bind(lit(ResourceTopic, "guarded"),
					allow(WildcardPrincipal, "*", OpRead),
					deny(bob, "broker.example.com", OpRead))),
			checks: []check{
				{alice, "", OpDelete, ResourceTopic, topic, false},
				{alice, "", OpAlter, ResourceTopic, topic, false},
				{alice, host1, OpDelete, ResourceTopic, topic, false},
				{bob, "", OpRead, ResourceTopic, topic, true}, // "*" matches any request
				{bob, "", OpRead, ResourceTopic, "guarded", true},
				{bob, host1, OpRead, ResourceTopic, "guarded", true},
			},
		},
		{
			name: "cluster resource",
			bindings: bind(lit(ResourceCluster, ClusterName),
				allow("User:broker", "*", OpClusterAction),
				allow(alice, "*", OpIdempotentWrite),
				allow(alice, "*", OpAlterConfigs)),
			checks: []check{
				{"User:broker", host1, OpClusterAction, ResourceCluster, ClusterName, true},
				{alice, host1, OpClusterAction, ResourceCluster, ClusterName, false},
				{alice, host1, OpIdempotentWrite, ResourceCluster, ClusterName, true},
				{alice, host1, OpDescribeConfigs, ResourceCluster, ClusterName, true}, // implied by AlterConfigs
				{alice, host1, OpDescribe, ResourceCluster, ClusterName, false},
				{alice, host1, OpCreate, ResourceCluster, ClusterName, false},
			},
		},
		{
			name:     "filter operations are never authorized",
			bindings: bind(lit(ResourceTopic, topic), allow(alice, "*", OpAll)),
			checks: []check{
				{alice, host1, OpAny, ResourceTopic, topic, false},
				{alice, host1, OpAll, ResourceTopic, topic, false},
				{alice, host1, OpUnknown, ResourceTopic, topic, false},
				{alice, host1, OpRead, ResourceAny, topic, false},
				{alice, host1, Operation(99), ResourceTopic, topic, false},
				{alice, host1, OpRead, ResourceType(-3), topic, false},
			},
		},
		{
			name: "unknown permission never matches but counts as an acl",
			cfg:  Config{AllowEveryoneIfNoACL: true},
			bindings: bind(lit(ResourceTopic, topic),
				Entry{Principal: alice, Host: "*", Operation: OpRead, Permission: PermissionUnknown}),
			checks: []check{{alice, host1, OpRead, ResourceTopic, topic, false}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := New(tc.cfg)
			a.Load(tc.bindings)
			for _, c := range tc.checks {
				var host netip.Addr
				if c.host != "" {
					host = netip.MustParseAddr(c.host)
				}
				if got := a.Authorize(c.principal, host, c.op, c.rt, c.name); got != c.want {
					t.Errorf("%v = %v, want %v", c, got, c.want)
				}
			}
		})
	}
}

// TestAuthorizeImplications is Kafka's testAclInheritance: on the cluster
// resource, an Allow of each operation allows exactly what it implies, and
// a Deny of each (beside an Allow All) denies exactly itself, or
// everything for All.
func TestAuthorizeImplications(t *testing.T) {
	concrete := []Operation{OpRead, OpWrite, OpCreate, OpDelete, OpAlter, OpDescribe, OpClusterAction,
		OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite, OpCreateTokens, OpDescribeTokens}
	implied := map[Operation][]Operation{
		OpAll:          concrete,
		OpRead:         {OpDescribe},
		OpWrite:        {OpDescribe},
		OpDelete:       {OpDescribe},
		OpAlter:        {OpDescribe},
		OpAlterConfigs: {OpDescribeConfigs},
	}
	host := netip.MustParseAddr("192.168.3.1")
	cluster := lit(ResourceCluster, ClusterName)
	for _, parent := range append([]Operation{OpAll}, concrete...) {
		t.Run("allow="+parent.String(), func(t *testing.T) {
			a := New(Config{})
			a.Load(bind(cluster, allow(alice, "*", parent)))
			for _, op := range concrete {
				want := op == parent || slices.Contains(implied[parent], op)
				if got := a.Authorize(alice, host, op, ResourceCluster, ClusterName); got != want {
					t.Errorf("Allow %v: %v = %v, want %v", parent, op, got, want)
				}
				if got := parent.Implies(op); got != want {
					t.Errorf("%v.Implies(%v) = %v, want %v", parent, op, got, want)
				}
			}
		})
		t.Run("deny="+parent.String(), func(t *testing.T) {
			a := New(Config{})
			a.Load(bind(cluster, deny(alice, "*", parent), allow(alice, "*", OpAll)))
			for _, op := range concrete {
				want := !(op == parent || parent == OpAll)
				if got := a.Authorize(alice, host, op, ResourceCluster, ClusterName); got != want {
					t.Errorf("Deny %v: %v = %v, want %v", parent, op, got, want)
				}
			}
		})
	}
}

// TestAuthorizerApply checks incremental changes and Follow against a
// MemStore: a change made through the store is decided on at once.
func TestAuthorizerApply(t *testing.T) {
	ctx := context.Background()
	s := NewMemStore()
	a := New(Config{})
	host := netip.MustParseAddr("10.1.1.1")
	if err := s.Add(ctx, bind(lit(ResourceTopic, "t"), allow(alice, "*", OpRead))); err != nil {
		t.Fatal(err)
	}
	cancel, err := a.Follow(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Authorize(alice, host, OpRead, ResourceTopic, "t") {
		t.Fatal("ACL stored before Follow not loaded")
	}
	if err := s.Add(ctx, bind(pre(ResourceTopic, "t"), deny(alice, "*", OpRead))); err != nil {
		t.Fatal(err)
	}
	if a.Authorize(alice, host, OpRead, ResourceTopic, "t") {
		t.Fatal("deny added after Follow not applied")
	}
	if _, err := s.Remove(ctx, Filter{Pattern: PatternFilter{Type: ResourceTopic, PatternType: PatternPrefixed}, Entry: AnyEntry}); err != nil {
		t.Fatal(err)
	}
	if !a.Authorize(alice, host, OpRead, ResourceTopic, "t") {
		t.Fatal("removed deny still applied")
	}
	if a.Len() != 1 {
		t.Fatalf("Len = %d, want 1", a.Len())
	}
	cancel()
	if _, err := s.Remove(ctx, AnyBinding); err != nil {
		t.Fatal(err)
	}
	if !a.Authorize(alice, host, OpRead, ResourceTopic, "t") {
		t.Fatal("change applied after cancel")
	}
}

// TestAuthorizeConcurrentWithUpdates runs Authorize on many goroutines
// while ACLs change (for the race detector): every answer is one of the
// two states.
func TestAuthorizeConcurrentWithUpdates(t *testing.T) {
	a := New(Config{})
	host := netip.MustParseAddr("10.1.1.1")
	stateA := bind(lit(ResourceTopic, "t"), allow(alice, "*", OpRead))
	stateB := bind(pre(ResourceTopic, "t"), allow(alice, "*", OpRead), allow(bob, "*", OpRead))
	a.Load(stateA)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if !a.Authorize(alice, host, OpRead, ResourceTopic, "t") {
					t.Error("alice denied in both states")
					return
				}
				a.Authorize(bob, host, OpRead, ResourceTopic, "t")
			}
		}()
	}
	for i := range 200 {
		if i%2 == 0 {
			a.Load(stateB)
		} else {
			a.Apply([]Change{{Pattern: lit(ResourceTopic, "t"), Entries: []Entry{allow(alice, "*", OpRead)}},
				{Pattern: pre(ResourceTopic, "t")}})
		}
	}
	close(stop)
	wg.Wait()
}

func TestParseSuperUsers(t *testing.T) {
	got, err := ParseSuperUsers(" User:admin ; User:CN=broker,O=acme;;")
	if err != nil || !slices.Equal(got, []string{"User:admin", "User:CN=broker,O=acme"}) {
		t.Fatalf("got %q, %v", got, err)
	}
	if got, err := ParseSuperUsers(""); err != nil || got != nil {
		t.Fatalf("empty: %q, %v", got, err)
	}
	if _, err := ParseSuperUsers("User:a;admin"); err == nil {
		t.Fatal("entry without a type accepted")
	}
	a := New(Config{SuperUsers: []string{"User:admin"}})
	if !a.IsSuperUser("User:admin") || a.IsSuperUser("User:bob") {
		t.Fatal("IsSuperUser")
	}
}
