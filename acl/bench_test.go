package acl

import (
	"fmt"
	"net/netip"
	"testing"
)

// benchAuthorizer returns an authorizer with n ACL entries of the given
// kind, and a resource name on which alice may Read and mallory may not.
//
//	kind=literal:  n-1 topics "topic-<i>" with one Allow each for other
//	               users, plus the target topic with Allow Read for alice.
//	kind=prefixed: n-1 PREFIXED patterns "team-<i>." (prefix lengths vary
//	               with the number of digits) for other users, plus
//	               "team-target." with Allow Read for alice; the
//	               resource is "team-target.orders".
//
// A Deny on the LITERAL "*" for a third user keeps the wildcard list in
// every decision.
func benchAuthorizer(n int, kind string) (*Authorizer, string) {
	var bs []Binding
	other := func(i int) Entry { return allow(fmt.Sprintf("User:u%d", i), "10.0.0.1", OpWrite) }
	bs = append(bs, Binding{lit(ResourceTopic, WildcardResource), deny("User:eve", "*", OpAll)})
	var name string
	switch kind {
	case "literal":
		for i := 0; i < n-2; i++ {
			bs = append(bs, Binding{lit(ResourceTopic, fmt.Sprintf("topic-%d", i)), other(i)})
		}
		name = "topic-target"
		bs = append(bs, Binding{lit(ResourceTopic, name), allow(alice, "*", OpRead)})
	case "prefixed":
		for i := 0; i < n-2; i++ {
			bs = append(bs, Binding{pre(ResourceTopic, fmt.Sprintf("team-%d.", i)), other(i)})
		}
		bs = append(bs, Binding{pre(ResourceTopic, "team-target."), allow(alice, "*", OpRead)})
		name = "team-target.orders"
	}
	if n == 1 {
		bs = bs[len(bs)-1:]
	}
	a := New(Config{SuperUsers: []string{"User:admin"}})
	a.Load(bs)
	return a, name
}

// BenchmarkAuthorize measures one decision on the produce/fetch path; it
// must stay at 0 allocs/op.
func BenchmarkAuthorize(b *testing.B) {
	host := netip.MustParseAddr("192.168.10.20")
	for _, n := range []int{1, 100, 10000} {
		for _, kind := range []string{"literal", "prefixed"} {
			a, name := benchAuthorizer(n, kind)
			if a.Len() != n {
				b.Fatalf("built %d ACLs, want %d", a.Len(), n)
			}
			for _, result := range []string{"allowed", "denied"} {
				principal, want := alice, true
				if result == "denied" {
					principal, want = "User:mallory", false
				}
				b.Run(fmt.Sprintf("acls=%d/kind=%s/result=%s", n, kind, result), func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if a.Authorize(principal, host, OpRead, ResourceTopic, name) != want {
							b.Fatal("wrong decision")
						}
					}
				})
			}
		}
	}
}

// TestAuthorizeAllocs holds Authorize to zero allocations, the promise
// BenchmarkAuthorize measures.
func TestAuthorizeAllocs(t *testing.T) {
	host := netip.MustParseAddr("192.168.10.20")
	for _, kind := range []string{"literal", "prefixed"} {
		a, name := benchAuthorizer(100, kind)
		for _, principal := range []string{alice, "User:mallory", "User:admin"} {
			allocs := testing.AllocsPerRun(100, func() {
				a.Authorize(principal, host, OpRead, ResourceTopic, name)
				a.Authorize(principal, host, OpDescribe, ResourceTopic, name+"x")
			})
			if allocs != 0 {
				t.Errorf("kind=%s principal=%s: %v allocs per Authorize", kind, principal, allocs)
			}
		}
	}
}
