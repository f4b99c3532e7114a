package config

import (
	"errors"
	"testing"
)

// TestListenerLimit: listener.name.<l>.max.connections and
// .max.connection.creation.rate are read per listener (name lowercased,
// as Kafka), absent when unset, and a bad value fails Validate naming the
// key.
func TestListenerLimit(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        int32
		ok, bad     bool
	}{
		{name: "unset"},
		{name: "set", value: "7", want: 7, ok: true},
		{name: "zero", value: "0", want: 0, ok: true},
		{name: "not a number", value: "seven", bad: true},
		{name: "negative", value: "-1", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.Listeners = []string{"CLIENT://127.0.0.1:9092", "INTERNAL://127.0.0.1:9093"}
			c.ListenerSecurityProtocolMap = map[string]string{"CLIENT": "PLAINTEXT", "INTERNAL": "PLAINTEXT"}
			if tc.value != "" {
				if err := c.Set("listener.name.client.max.connections", tc.value); err != nil {
					t.Fatal(err)
				}
			}
			err := c.Validate()
			if tc.bad {
				if !errors.Is(err, ErrConfig) {
					t.Fatalf("Validate: %v, want ErrConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n, ok := c.ListenerLimit("CLIENT", "max.connections"); n != tc.want || ok != tc.ok {
				t.Fatalf("CLIENT: %d, %v; want %d, %v", n, ok, tc.want, tc.ok)
			}
			if _, ok := c.ListenerLimit("INTERNAL", "max.connections"); ok {
				t.Fatal("INTERNAL has CLIENT's limit")
			}
		})
	}
}
