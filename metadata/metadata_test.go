package metadata

import "testing"

func TestBrokerAddresses(t *testing.T) {
	b := Broker{ID: 1, Host: "h", Port: 9092, Endpoints: map[string]string{
		"INTERNAL": "10.0.0.1:9093",
		"BAD":      "no-port",
		"BADPORT":  "h:x",
	}}
	for _, tc := range []struct {
		name, listener string
		addr           string
		host           string
		port           int32
		ok             bool
	}{
		{name: "registered", listener: "INTERNAL", addr: "10.0.0.1:9093", host: "10.0.0.1", port: 9093, ok: true},
		{name: "unknown", listener: "OTHER", addr: "h:9092"},
		{name: "default", listener: "", addr: "h:9092"},
		{name: "no port", listener: "BAD", addr: "no-port"},
		{name: "bad port", listener: "BADPORT", addr: "h:x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := b.AddrFor(tc.listener); got != tc.addr {
				t.Errorf("AddrFor(%q) = %q, want %q", tc.listener, got, tc.addr)
			}
			h, p, ok := b.EndpointFor(tc.listener)
			if h != tc.host || p != tc.port || ok != tc.ok {
				t.Errorf("EndpointFor(%q) = %q, %d, %v; want %q, %d, %v", tc.listener, h, p, ok, tc.host, tc.port, tc.ok)
			}
		})
	}
	if got := (TopicPartition{Topic: "t", Partition: 3}).String(); got != "t-3" {
		t.Errorf("TopicPartition.String() = %q", got)
	}
}
