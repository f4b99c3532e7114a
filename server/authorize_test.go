package server

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/sluice/sluice/acl"
)

// BenchmarkAuthorizeProduce: the authorization of a produce or fetch (one
// decision per topic of the request, through the connection's principal)
// allocates nothing, with 1,000 ACLs loaded.
func BenchmarkAuthorizeProduce(b *testing.B) {
	a := acl.New(acl.Config{SuperUsers: []string{"User:admin"}})
	var bindings []acl.Binding
	for i := range 1000 {
		bindings = append(bindings, acl.Binding{
			Pattern: acl.ResourcePattern{Type: acl.ResourceTopic, Name: fmt.Sprintf("topic-%d", i), PatternType: acl.PatternLiteral},
			Entry:   acl.Entry{Principal: fmt.Sprintf("User:u%d", i%50), Host: "*", Operation: acl.OpWrite, Permission: acl.PermissionAllow},
		})
	}
	bindings = append(bindings, acl.Binding{
		Pattern: acl.ResourcePattern{Type: acl.ResourceTopic, Name: "orders", PatternType: acl.PatternPrefixed},
		Entry:   acl.Entry{Principal: "User:alice", Host: "*", Operation: acl.OpWrite, Permission: acl.PermissionAllow},
	})
	a.Load(bindings)
	s := &Server{az: authorizer{authz: a}}
	c := &conn{ip: netip.MustParseAddr("127.0.0.1")}
	c.auth.principal = "User:alice"
	rc := &reqCtx{conn: c}
	for _, tc := range []struct {
		name, topic string
		op          acl.Operation
		want        bool
	}{
		{"op=Write/allowed", "orders-eu", acl.OpWrite, true},
		{"op=Read/fetch-denied", "orders-eu", acl.OpRead, false},
		{"op=Write/denied", "payments", acl.OpWrite, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			if got := s.az.allowedTopic(rc, tc.op, tc.topic); got != tc.want {
				b.Fatalf("allowed = %v, want %v", got, tc.want)
			}
			b.ReportAllocs()
			for b.Loop() {
				s.az.allowedTopic(rc, tc.op, tc.topic)
			}
		})
	}
}

// TestAuthorizeProduceAllocs keeps the authorization of produce and fetch
// allocation-free (the benchmark's figure, as a test).
func TestAuthorizeProduceAllocs(t *testing.T) {
	a := acl.New(acl.Config{})
	a.Load([]acl.Binding{{
		Pattern: acl.ResourcePattern{Type: acl.ResourceTopic, Name: "orders", PatternType: acl.PatternPrefixed},
		Entry:   acl.Entry{Principal: "User:alice", Host: "*", Operation: acl.OpWrite, Permission: acl.PermissionAllow},
	}})
	s := &Server{az: authorizer{authz: a}}
	c := &conn{ip: netip.MustParseAddr("127.0.0.1")}
	c.auth.principal = "User:alice"
	rc := &reqCtx{conn: c}
	if n := testing.AllocsPerRun(100, func() { s.az.allowedTopic(rc, acl.OpWrite, "orders-1") }); n != 0 {
		t.Fatalf("%v allocations per authorization", n)
	}
}
