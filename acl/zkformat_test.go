package acl

import (
	"errors"
	"slices"
	"testing"
)

func TestZNodeRoundTrip(t *testing.T) {
	es := []Entry{allow(bob, "*", OpRead), deny(alice, "10.0.0.1", OpIdempotentWrite), allow(bob, "*", OpRead)}
	data := MarshalZNode(es)
	want := `{"version":1,"acls":[` +
		`{"principal":"User:alice","permissionType":"Deny","operation":"IdempotentWrite","host":"10.0.0.1"},` +
		`{"principal":"User:bob","permissionType":"Allow","operation":"Read","host":"*"}]}`
	if string(data) != want {
		t.Fatalf("MarshalZNode:\n got %s\nwant %s", data, want)
	}
	got, err := UnmarshalZNode(data)
	if err != nil || !slices.Equal(got, SortEntries(slices.Clone(es))) {
		t.Fatalf("UnmarshalZNode = %v, %v", got, err)
	}
}

// TestUnmarshalZNodeKafka decodes znodes as Kafka writes them (field
// order, spacing and case vary).
func TestUnmarshalZNodeKafka(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []Entry
		err  bool
	}{
		{"kafka doc", `{"version": 1, "acls": [ { "host":"host1", "permissionType": "Deny","operation": "Read","principal": "User:alice"}]}`,
			[]Entry{deny(alice, "host1", OpRead)}, false},
		{"upper case names", `{"version":1,"acls":[{"principal":"User:bob","permissionType":"ALLOW","operation":"DESCRIBE_CONFIGS","host":"*"}]}`,
			[]Entry{allow(bob, "*", OpDescribeConfigs)}, false},
		{"unknown operation kept as unknown", `{"version":1,"acls":[{"principal":"User:bob","permissionType":"Allow","operation":"Teleport","host":"*"}]}`,
			[]Entry{allow(bob, "*", OpUnknown)}, false},
		{"empty", ``, nil, false},
		{"null", `null`, nil, false},
		{"no acls", `{"version":1,"acls":[]}`, []Entry{}, false},
		{"version 2", `{"version":2,"acls":[]}`, nil, true},
		{"no version", `{"acls":[]}`, nil, true},
		{"missing host", `{"version":1,"acls":[{"principal":"User:bob","permissionType":"Allow","operation":"Read"}]}`, nil, true},
		{"bad principal", `{"version":1,"acls":[{"principal":"bob","permissionType":"Allow","operation":"Read","host":"*"}]}`, nil, true},
		{"not json", `{"version":1,`, nil, true},
		{"acls not a list", `{"version":1,"acls":{}}`, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := UnmarshalZNode([]byte(tc.data))
			if tc.err {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("err = %v, want ErrCorrupt", err)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) || !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestChangeNotifications(t *testing.T) {
	tests := []struct {
		p        ResourcePattern
		data     string
		extended bool
	}{
		{lit(ResourceTopic, "orders"), "TOPIC:orders", false},
		{lit(ResourceTransactionalID, "tx:1"), "TRANSACTIONAL_ID:tx:1", false},
		{lit(ResourceCluster, ClusterName), "CLUSTER:kafka-cluster", false},
		{pre(ResourceGroup, "g-"), `{"version":1,"resourceType":"GROUP","name":"g-","patternType":"PREFIXED"}`, true},
	}
	for _, tc := range tests {
		data, ext := MarshalChange(tc.p)
		if string(data) != tc.data || ext != tc.extended {
			t.Errorf("MarshalChange(%v) = %s, %v; want %s, %v", tc.p, data, ext, tc.data, tc.extended)
		}
		got, err := UnmarshalChange(data, ext)
		if err != nil || got != tc.p {
			t.Errorf("UnmarshalChange(%s) = %v, %v", data, got, err)
		}
	}
	// Kafka before 2.0 wrote Scala names ("Topic:orders").
	if got, err := UnmarshalChange([]byte("Topic:orders"), false); err != nil || got != lit(ResourceTopic, "orders") {
		t.Errorf("legacy literal change: %v, %v", got, err)
	}
	for _, bad := range []struct {
		data     string
		extended bool
	}{
		{"orders", false}, {"Any:x", false}, {"Planet:x", false},
		{`{"version":2,"resourceType":"TOPIC","name":"a","patternType":"PREFIXED"}`, true},
		{`{"version":1,"resourceType":"TOPIC","name":"a","patternType":"MATCH"}`, true},
		{`{"version":1,"resourceType":"TOPIC","patternType":"PREFIXED"}`, true},
		{`[]`, true},
	} {
		if _, err := UnmarshalChange([]byte(bad.data), bad.extended); !errors.Is(err, ErrCorrupt) {
			t.Errorf("UnmarshalChange(%s) err = %v, want ErrCorrupt", bad.data, err)
		}
	}
}

// FuzzDecodeZNode feeds the same bytes to the ACL znode decoder and to
// both change notification decoders. Invariants:
//
//   - none panics, and every failure wraps ErrCorrupt;
//   - UnmarshalZNode never returns more entries than the input can hold
//     (each takes at least 60 bytes: four quoted keys and values, ':' and
//     ','), its entries are in SortEntries form (sorted, no duplicates),
//     and each principal is "Type:name";
//   - re-parsing is stable: MarshalZNode of the result decodes to the same
//     entries, and a change notification re-encoded with MarshalChange
//     decodes to the same pattern;
//   - a decoded change names a concrete resource type and a LITERAL or
//     PREFIXED pattern.
func FuzzDecodeZNode(f *testing.F) {
	for _, s := range []string{
		`{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}`,
		`{"version": 1, "acls": [ { "host":"host1", "permissionType": "Deny","operation": "Read","principal": "User:alice"}]}`,
		`{"version":1,"acls":[{"principal":"User:a","permissionType":"ALLOW","operation":"IDEMPOTENT_WRITE","host":"::1"},{"principal":"User:a","permissionType":"ALLOW","operation":"IDEMPOTENT_WRITE","host":"::1"}]}`,
		`{"version":1,"acls":[]}`,
		`{"version":2,"acls":[]}`,
		`{"version":1,"resourceType":"TOPIC","name":"orders-","patternType":"PREFIXED"}`,
		`{"version":1,"resourceType":"Group","name":"","patternType":"literal"}`,
		`TOPIC:orders`,
		`Topic:a:b`,
		`TRANSACTIONAL_ID:tx`,
		`null`,
		``,
		`{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := UnmarshalZNode(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("UnmarshalZNode error %v does not wrap ErrCorrupt", err)
			}
		} else {
			if len(es)*60 > len(data) {
				t.Fatalf("%d entries from %d bytes", len(es), len(data))
			}
			if !slices.IsSortedFunc(es, CompareEntries) || len(slices.Compact(slices.Clone(es))) != len(es) {
				t.Fatalf("entries not in SortEntries form: %v", es)
			}
			for _, e := range es {
				if !validPrincipal(e.Principal) {
					t.Fatalf("principal %q", e.Principal)
				}
			}
			again, err := UnmarshalZNode(MarshalZNode(es))
			if err != nil || !slices.Equal(again, es) {
				t.Fatalf("re-parse: %v, %v; want %v", again, err, es)
			}
		}
		for _, extended := range []bool{false, true} {
			p, err := UnmarshalChange(data, extended)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("UnmarshalChange error %v does not wrap ErrCorrupt", err)
				}
				continue
			}
			if !p.Type.Concrete() || !p.PatternType.Specific() || (!extended && p.PatternType != PatternLiteral) {
				t.Fatalf("decoded %v", p)
			}
			d, ext := MarshalChange(p)
			again, err := UnmarshalChange(d, ext)
			if err != nil || again != p {
				t.Fatalf("re-parse of %v: %v, %v", p, again, err)
			}
		}
	})
}
