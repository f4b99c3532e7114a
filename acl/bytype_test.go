package acl

import (
	"net/netip"
	"slices"
	"testing"
)

// TestAuthorizeByResourceType checks Kafka's
// AclAuthorizer.authorizeByResourceType rules (the cases of its
// AclAuthorizerTest.testAuthorizeByResourceType* and
// BaseAuthorizerTest): any surviving Allow on the type grants, whether the
// resource exists or not; a PREFIXED Deny dominates every Allow under it;
// a LITERAL Deny on "*" denies all; implications do not count.
func TestAuthorizeByResourceType(t *testing.T) {
	host := netip.MustParseAddr("10.0.0.1")
	for _, tc := range []struct {
		name string
		acls [][]Binding
		cfg  Config
		op   Operation
		who  string
		want bool
	}{
		{"no acls", nil, Config{}, OpWrite, alice, false},
		{"no acls/allow everyone", nil, Config{AllowEveryoneIfNoACL: true}, OpWrite, alice, true},
		{"super user", nil, Config{SuperUsers: []string{alice}}, OpWrite, alice, true},
		{"literal allow, topic need not exist", [][]Binding{bind(lit(ResourceTopic, "not-yet"), allow(alice, "*", OpWrite))}, Config{}, OpWrite, alice, true},
		{"prefixed allow", [][]Binding{bind(pre(ResourceTopic, "orders-"), allow(alice, "*", OpWrite))}, Config{}, OpWrite, alice, true},
		{"wildcard allow", [][]Binding{bind(lit(ResourceTopic, "*"), allow("User:*", "*", OpWrite))}, Config{}, OpWrite, alice, true},
		{"All allows", [][]Binding{bind(lit(ResourceTopic, "t"), allow(alice, "*", OpAll))}, Config{}, OpWrite, alice, true},
		{"other principal", [][]Binding{bind(lit(ResourceTopic, "t"), allow(bob, "*", OpWrite))}, Config{}, OpWrite, alice, false},
		{"other host", [][]Binding{bind(lit(ResourceTopic, "t"), allow(alice, "10.0.0.2", OpWrite))}, Config{}, OpWrite, alice, false},
		{"same host", [][]Binding{bind(lit(ResourceTopic, "t"), allow(alice, "10.0.0.1", OpWrite))}, Config{}, OpWrite, alice, true},
		{"other operation", [][]Binding{bind(lit(ResourceTopic, "t"), allow(alice, "*", OpRead))}, Config{}, OpWrite, alice, false},
		{"no implication", [][]Binding{bind(lit(ResourceTopic, "t"), allow(alice, "*", OpWrite))}, Config{}, OpDescribe, alice, false},
		{"other type", [][]Binding{bind(lit(ResourceGroup, "t"), allow(alice, "*", OpWrite))}, Config{}, OpWrite, alice, false},
		{"literal deny same name", [][]Binding{bind(lit(ResourceTopic, "t"), allow(alice, "*", OpWrite), deny(alice, "*", OpWrite))}, Config{}, OpWrite, alice, false},
		{"literal deny other name", [][]Binding{
			bind(lit(ResourceTopic, "t"), allow(alice, "*", OpWrite)),
			bind(lit(ResourceTopic, "u"), deny(alice, "*", OpWrite)),
		}, Config{}, OpWrite, alice, true},
		{"prefixed deny dominates literal", [][]Binding{
			bind(lit(ResourceTopic, "orders-eu"), allow(alice, "*", OpWrite)),
			bind(pre(ResourceTopic, "orders"), deny(alice, "*", OpWrite)),
		}, Config{}, OpWrite, alice, false},
		{"prefixed deny dominates prefixed", [][]Binding{
			bind(pre(ResourceTopic, "orders-eu"), allow(alice, "*", OpWrite)),
			bind(pre(ResourceTopic, "orders-eu"), deny(alice, "*", OpWrite)),
		}, Config{}, OpWrite, alice, false},
		{"longer prefixed deny does not dominate", [][]Binding{
			bind(pre(ResourceTopic, "orders"), allow(alice, "*", OpWrite)),
			bind(pre(ResourceTopic, "orders-eu"), deny(alice, "*", OpWrite)),
		}, Config{}, OpWrite, alice, true},
		{"wildcard deny", [][]Binding{
			bind(pre(ResourceTopic, "orders"), allow(alice, "*", OpWrite)),
			bind(lit(ResourceTopic, "*"), deny(alice, "*", OpWrite)),
		}, Config{AllowEveryoneIfNoACL: true}, OpWrite, alice, false},
		{"deny All", [][]Binding{
			bind(lit(ResourceTopic, "t"), allow(alice, "*", OpWrite)),
			bind(pre(ResourceTopic, "t"), deny("User:*", "*", OpAll)),
		}, Config{}, OpWrite, alice, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := New(tc.cfg)
			a.Load(slices.Concat(tc.acls...))
			if got := a.AuthorizeByResourceType(tc.who, host, tc.op, ResourceTopic); got != tc.want {
				t.Errorf("AuthorizeByResourceType = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestAuthorizeByResourceTypeAllocs: the decision allocates nothing, as
// its doc comment promises.
func TestAuthorizeByResourceTypeAllocs(t *testing.T) {
	a := New(Config{})
	a.Load(slices.Concat(
		bind(pre(ResourceTopic, "orders-eu"), allow(alice, "*", OpWrite)),
		bind(pre(ResourceTopic, "orders"), deny(alice, "*", OpWrite)),
		bind(lit(ResourceTopic, "t"), allow(alice, "*", OpWrite)),
	))
	host := netip.MustParseAddr("10.0.0.1")
	if n := testing.AllocsPerRun(100, func() { a.AuthorizeByResourceType(alice, host, OpWrite, ResourceTopic) }); n != 0 {
		t.Fatalf("%v allocations per decision", n)
	}
}
