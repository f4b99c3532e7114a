package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestWithDynamicPrecedence: the broker layer beats the default layer,
// which beats the static config, each key replacing its synonyms
// (log.retention.ms over a static log.retention.hours); entries that may
// not be set dynamically are skipped and reported, the rest apply; the
// static config is not changed.
func TestWithDynamicPrecedence(t *testing.T) {
	static, err := Load("", []string{"log.retention.hours=1", "message.max.bytes=5000", "listener.name.plaintext.max.connections=7"})
	if err != nil {
		t.Fatal(err)
	}
	def := map[string]string{"log.retention.ms": "5000", "message.max.bytes": "3000", "log.dirs": "/x", "log.segment.bytes": "oops",
		"listener.name.plaintext.max.connections": "9"}
	own := map[string]string{"message.max.bytes": "2000"}
	c, err := static.WithDynamic(def, own)
	if err == nil || !strings.Contains(err.Error(), "log.dirs") || !strings.Contains(err.Error(), "log.segment.bytes") {
		t.Fatalf("skipped entries not reported: %v", err)
	}
	if c.LogRetention != 5*time.Second || c.MessageMaxBytes != 2000 || c.LogSegmentBytes != static.LogSegmentBytes {
		t.Fatalf("retention %v, message.max.bytes %d, segment %d", c.LogRetention, c.MessageMaxBytes, c.LogSegmentBytes)
	}
	if n, _ := c.ListenerLimit("PLAINTEXT", "max.connections"); n != 9 {
		t.Fatalf("listener limit %d, want 9", n)
	}
	if n, _ := static.ListenerLimit("PLAINTEXT", "max.connections"); n != 7 || static.MessageMaxBytes != 5000 {
		t.Fatalf("static config changed: limit %d, message.max.bytes %d", n, static.MessageMaxBytes)
	}
	mmb, _ := Lookup("message.max.bytes")
	if v, src := c.Describe(mmb); *v != "2000" || src != SourceDynamicBroker {
		t.Fatalf("message.max.bytes described %s %v", *v, src)
	}
	want := []Synonym{
		{"message.max.bytes", ptr("2000"), SourceDynamicBroker},
		{"message.max.bytes", ptr("3000"), SourceDynamicDefaultBroker},
		{"message.max.bytes", ptr("5000"), SourceStaticBroker},
		{"message.max.bytes", ptr("1048588"), SourceDefaultConfig},
	}
	if got := c.Synonyms(mmb, true); !equalSyn(got, want) {
		t.Fatalf("synonyms %v", got)
	}
	if got := c.Synonyms(mmb, false); !equalSyn(got, want[1:2]) {
		t.Fatalf("default-level synonyms %v", got)
	}
	// log.retention.hours: the entries before its own name are dropped.
	hours, _ := Lookup("log.retention.hours")
	want = []Synonym{
		{"log.retention.hours", ptr("1"), SourceStaticBroker},
		{"log.retention.ms", ptr("604800000"), SourceDefaultConfig},
		{"log.retention.hours", ptr("168"), SourceDefaultConfig},
	}
	if got := c.Synonyms(hours, true); !equalSyn(got, want) {
		t.Fatalf("log.retention.hours synonyms %v", got)
	}
}

func ptr(s string) *string { return &s }

func equalSyn(a, b []Synonym) bool {
	return slices.EqualFunc(a, b, func(x, y Synonym) bool {
		return x.Name == y.Name && x.Source == y.Source && (x.Value == nil) == (y.Value == nil) && (x.Value == nil || *x.Value == *y.Value)
	})
}

// TestCheckDynamic: Kafka's refusals, in Kafka's order and words.
func TestCheckDynamic(t *testing.T) {
	for _, tc := range []struct {
		name      string
		props     map[string]string
		perBroker bool
		want      string
	}{
		{"dynamic", map[string]string{"log.retention.ms": "1", "listener.name.x.max.connections": "3"}, false, ""},
		{"static first", map[string]string{"log.dirs": "/x", "message.max.bytes": "abc"}, true, "Cannot update these configs dynamically: Set(log.dirs)"},
		{"alias", map[string]string{"node.id": "1"}, true, "Cannot update these configs dynamically: Set(node.id)"},
		{"tail cache is static", map[string]string{"log.segment.tail.cache.bytes": "0"}, false, "Cannot update these configs dynamically: Set(log.segment.tail.cache.bytes)"},
		{"bad value", map[string]string{"max.connections": "-1"}, true, "Invalid value -1 for configuration max.connections: -1 is out of range [0, 2147483647]"},
		{"bad listener value", map[string]string{"listener.name.x.max.connections": "many"}, true, `Invalid value many for configuration listener.name.x.max.connections: "many" is not an integer`},
		{"listener key not dynamic", map[string]string{"listener.name.x.sasl.enabled.mechanisms": "PLAIN"}, true, "Cannot update these configs dynamically: Set(listener.name.x.sasl.enabled.mechanisms)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckDynamic(tc.props, tc.perBroker)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
