package schemareg

import (
	"errors"
	"strings"
	"testing"
)

// Keys encode exactly as Confluent's Jackson serializer writes them
// (@JsonPropertyOrder, NON_EMPTY): a Confluent registry finds our records
// under the keys it would have written, and compaction keeps one per key.
func TestKeyEncoding(t *testing.T) {
	for _, tc := range []struct {
		key  storeKey
		want string
	}{
		{schemaKey("foo", 1), `{"keytype":"SCHEMA","subject":"foo","version":1,"magic":1}`},
		{configKey("foo"), `{"keytype":"CONFIG","subject":"foo","magic":0}`},
		{configKey(""), `{"keytype":"CONFIG","magic":0}`},
		{modeKey("foo"), `{"keytype":"MODE","subject":"foo","magic":0}`},
		{deleteSubjectKey("foo"), `{"keytype":"DELETE_SUBJECT","subject":"foo","magic":0}`},
	} {
		if got := string(encodeKey(tc.key)); got != tc.want {
			t.Errorf("encodeKey(%+v) = %s, want %s", tc.key, got, tc.want)
		}
	}
}

// A topic written by Confluent's registry replays into the view: values
// with Confluent's fields (and fields we do not know), a magic-0 schema
// key, a soft delete of the whole subject, a tombstone and unknown key
// types.
func TestReplayConfluentRecords(t *testing.T) {
	v := newView()
	recs := []struct{ k, v string }{
		{`{"keytype":"SCHEMA","subject":"test","version":1,"magic":0}`,
			`{"subject":"test","version":1,"id":1,"schema":"{\"type\":\"record\",\"name\":\"myrecord\",\"fields\":[{\"name\":\"f1067572235\",\"type\":\"string\"}]}"}`},
		{`{"keytype":"SCHEMA","subject":"test","version":2,"magic":1}`,
			`{"subject":"test","version":2,"id":7,"md5":"x","schemaType":"PROTOBUF","schema":"syntax = \"proto3\";","deleted":false,"metadata":{"properties":{"a":"b"}}}`},
		{`{"keytype":"CONFIG","magic":0}`, `{"compatibilityLevel":"FULL","alias":null}`},
		{`{"keytype":"MODE","subject":"test","magic":0}`, `{"subject":"test","mode":"READONLY"}`},
		{`{"keytype":"CONTEXT","tenant":"default","context":".","magic":0}`, `{"tenant":"default","context":"."}`},
		{`{"keytype":"NOOP","magic":0}`, ``},
		{`{"keytype":"DELETE_SUBJECT","subject":"test","magic":0}`, `{"subject":"test","version":1}`},
		{`{"keytype":"SCHEMA","subject":"gone","version":1,"magic":1}`, `{"subject":"gone","version":1,"id":3,"schema":"\"string\"","deleted":true}`},
		{`{"keytype":"SCHEMA","subject":"gone","version":1,"magic":1}`, ""}, // tombstone
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for i, r := range recs {
		var val []byte
		if r.v != "" {
			val = []byte(r.v)
		}
		if err := v.applyLocked([]byte(r.k), val, int64(i)); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if v.applied != int64(len(recs)) {
		t.Fatalf("applied %d, want %d", v.applied, len(recs))
	}
	live := v.versionsLocked("test", false)
	if len(live) != 1 || live[0].Version != 2 || live[0].ID != 7 || live[0].SchemaType != "PROTOBUF" {
		t.Fatalf("live versions of test: %+v", live)
	}
	if all := v.versionsLocked("test", true); len(all) != 2 || !all[0].Deleted {
		t.Fatalf("version 1 not soft-deleted by DELETE_SUBJECT: %+v", all)
	}
	if v.compatibilityLocked("test") != "FULL" || v.modeLocked("test") != "READONLY" || v.modeLocked("other") != "READWRITE" {
		t.Fatalf("config %s mode %s", v.compatibilityLocked("test"), v.modeLocked("test"))
	}
	if v.subjects["gone"] != nil || v.ids[3] != nil || v.maxID != 7 {
		t.Fatalf("tombstone: subject %v id %v maxID %d", v.subjects["gone"], v.ids[3], v.maxID)
	}
}

// FuzzReplay feeds arbitrary records to the view. Invariants: it never
// panics, applied moves past every record (a bad record is skipped, not
// retried), and maxID is at least every live id.
func FuzzReplay(f *testing.F) {
	f.Add([]byte(`{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}`), []byte(`{"subject":"s","version":1,"id":1,"schema":"\"int\""}`))
	f.Add([]byte(`{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}`), []byte(`{"subject":"s","version":9}`))
	f.Add([]byte(`{"keytype":"CONFIG","magic":0}`), []byte(`null`))
	f.Add([]byte(`{"keytype":"MODE"}`), []byte(`{"mode":5}`))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		v := newView()
		v.mu.Lock()
		defer v.mu.Unlock()
		_ = v.applyLocked(key, value, 0)
		_ = v.applyLocked(key, nil, 1)
		_ = v.applyLocked(key, value, 2)
		if v.applied != 3 {
			t.Fatalf("applied %d", v.applied)
		}
		for id := range v.ids {
			if id > v.maxID {
				t.Fatalf("id %d above maxID %d", id, v.maxID)
			}
		}
	})
}

// A cycle of references in the topic (the API never writes one: a
// reference must exist before its user; a hostile producer or an import
// could) is refused as an invalid schema instead of recursing forever.
func TestCyclicReferences(t *testing.T) {
	r := &Registry{view: newView()}
	r.view.mu.Lock()
	for i, rec := range []struct{ k, v string }{
		{`{"keytype":"SCHEMA","subject":"a","version":1,"magic":1}`, `{"subject":"a","version":1,"id":1,"schema":"{\"type\":\"record\",\"name\":\"A\",\"fields\":[{\"name\":\"b\",\"type\":\"B\"}]}","references":[{"name":"B","subject":"b","version":1}]}`},
		{`{"keytype":"SCHEMA","subject":"b","version":1,"magic":1}`, `{"subject":"b","version":1,"id":2,"schema":"{\"type\":\"record\",\"name\":\"B\",\"fields\":[{\"name\":\"a\",\"type\":\"A\"}]}","references":[{"name":"A","subject":"a","version":1}]}`},
	} {
		if err := r.view.applyLocked([]byte(rec.k), []byte(rec.v), int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	r.view.mu.Unlock()
	r.view.mu.RLock()
	defer r.view.mu.RUnlock()
	_, err := r.resolveRefsLocked([]Reference{{Name: "A", Subject: "a", Version: 1}})
	if !errors.Is(err, errInvalidSchema) || !strings.Contains(err.Error(), "cyclic") {
		t.Fatalf("resolve a cycle: %v, want a cyclic-reference errInvalidSchema", err)
	}
	if _, err := r.parsedLocked(r.view.subjects["a"].versions[1]); !errors.Is(err, errInvalidSchema) {
		t.Fatalf("parse a schema in a cycle: %v", err)
	}
}

// checkDepth counts nesting the way each parser sees it: brackets in JSON
// strings and in .proto strings and comments do not count.
func TestCheckDepth(t *testing.T) {
	deep := strings.Repeat("{", maxSchemaDepth+1)
	for _, tc := range []struct {
		typ, text string
		refused   bool
	}{
		{typeAvro, `{"type":"string","doc":"` + deep + `"}`, false},
		{typeAvro, deep, true},
		{typeJSON, strings.Repeat("[", maxSchemaDepth+1), true},
		{typeProtobuf, "// " + deep + "\nmessage M {}", false},
		{typeProtobuf, "/* " + deep + " */ message M {}", false},
		{typeProtobuf, `option x = '` + deep + `'; message M {}`, false},
		{typeProtobuf, `// it's "quoted` + "\n" + strings.Repeat("message M { ", maxSchemaDepth+1), true},
		{typeProtobuf, strings.Repeat("message M { ", maxSchemaDepth) + strings.Repeat("}", maxSchemaDepth), false},
	} {
		err := checkDepth(tc.typ, tc.text)
		if (err != nil) != tc.refused || (err != nil && !errors.Is(err, errInvalidSchema)) {
			t.Errorf("checkDepth(%s, %.40q...) = %v, want refused %v", tc.typ, tc.text, err, tc.refused)
		}
	}
}

// FuzzParseSchema parses arbitrary text as each schema type. Invariants:
// it never panics, and every failure is an errInvalidSchema (a 422, never
// a 500).
func FuzzParseSchema(f *testing.F) {
	f.Add(`{"type":"record","name":"r","fields":[{"name":"a","type":["null","int"],"default":null}]}`)
	f.Add(`syntax = "proto3"; message M { map<string, int32> m = 1; oneof o { string s = 2; } }`)
	f.Add(`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"integer"}}}`)
	f.Fuzz(func(t *testing.T, text string) {
		for _, typ := range []string{typeAvro, typeJSON, typeProtobuf} {
			p, err := parseSchema(typ, text, nil, nil, true)
			if err != nil && !errors.Is(err, errInvalidSchema) {
				t.Fatalf("%s: error %v is not errInvalidSchema", typ, err)
			}
			if err == nil && p.same == "" {
				t.Fatalf("%s: parsed without an identity", typ)
			}
		}
	})
}

// An Avro default that does not match its field's type is an invalid
// schema (hamba/avro validates defaults; Confluent's
// AvroCompatibilityTest.testBadDefaultNull parses it: README says so).
func TestAvroBadDefaultRefused(t *testing.T) {
	_, err := parseSchema(typeAvro, `{"type":"record","name":"myrecord","fields":[{"type":["null","string"],"name":"f1","default":"null"}]}`, nil, nil, false)
	if !errors.Is(err, errInvalidSchema) {
		t.Fatalf("bad default: %v, want errInvalidSchema", err)
	}
}
