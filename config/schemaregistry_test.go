package config

import (
	"strings"
	"testing"
)

// schema.registry.listeners: on at http://127.0.0.1:8081 by default, off
// when empty, one http:// or https:// listener, nothing else.
func TestSchemaRegistryListeners(t *testing.T) {
	c := Default()
	if len(c.SchemaRegistryListeners) != 1 || c.SchemaRegistryListeners[0] != "http://127.0.0.1:8081" {
		t.Fatalf("default %v", c.SchemaRegistryListeners)
	}
	for _, tc := range []struct {
		set  string
		want []string
	}{
		{"schema.registry.listeners=", nil},
		{"schema.registry.listeners=HTTPS://0.0.0.0:8081", []string{"https://0.0.0.0:8081"}},
		{"schema.registry.listeners=http://[::1]:0", []string{"http://[::1]:0"}},
	} {
		c, err := Load("", []string{tc.set})
		if err != nil || strings.Join(c.SchemaRegistryListeners, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: %v %v, want %v", tc.set, c.SchemaRegistryListeners, err, tc.want)
		}
	}
	for _, bad := range []string{"http://a:1,http://b:2", "tcp://a:1", "http://nohost", "http://a:99999"} {
		if _, err := Load("", []string{"schema.registry.listeners=" + bad}); err == nil || !strings.Contains(err.Error(), "schema.registry.listeners") {
			t.Errorf("%s: err %v, want one naming the key", bad, err)
		}
	}
}
