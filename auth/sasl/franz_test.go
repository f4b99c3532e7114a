package sasl

import (
	"context"
	"testing"

	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestFranzGoClient runs franz-go's own SASL clients (an independent
// implementation of what Kafka clients send) against the server sessions.
func TestFranzGoClient(t *testing.T) {
	store := &MemoryStore{}
	for _, m := range []string{ScramSHA256, ScramSHA512} {
		if err := store.Put("alice", mustCredential(t, m, "alice-secret", 8192)); err != nil {
			t.Fatal(err)
		}
	}
	a := newTestAuth(t, store)
	for _, tc := range []struct {
		name, mech string
		client     kgosasl.Mechanism
		ok         bool
	}{
		{"scram-256", ScramSHA256, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(), true},
		{"scram-512", ScramSHA512, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(), true},
		{"scram-512 wrong", ScramSHA512, scram.Auth{User: "alice", Pass: "x"}.AsSha512Mechanism(), false},
		{"plain", Plain, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(), true},
		{"plain wrong", Plain, plain.Auth{User: "alice", Pass: "x"}.AsMechanism(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.client.Name() != tc.mech {
				t.Fatalf("franz-go names it %q", tc.client.Name())
			}
			srv, err := a.NewSession(tc.mech)
			if err != nil {
				t.Fatal(err)
			}
			sess, msg, err := tc.client.Authenticate(context.Background(), "broker:9092")
			if err != nil {
				t.Fatal(err)
			}
			for {
				resp, done, err := srv.Step(msg)
				if err != nil {
					if tc.ok {
						t.Fatalf("server: %v", err)
					}
					return
				}
				cdone, next, err := sess.Challenge(resp)
				if err != nil {
					t.Fatalf("franz-go client: %v", err)
				}
				if done {
					if !cdone || !tc.ok || srv.Principal() != "User:alice" {
						t.Fatalf("done: client %v, want ok %v, principal %q", cdone, tc.ok, srv.Principal())
					}
					return
				}
				msg = next
			}
		})
	}
}
