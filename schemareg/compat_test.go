package schemareg_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"
)

// The schemas of Confluent's AvroCompatibilityTest (schema-registry,
// core/src/test/.../avro/AvroCompatibilityTest.java), by its names.
var confluentAvro = map[string]string{
	// f1
	"schema1": `{"type":"record","name":"myrecord","fields":[{"type":"string","name":"f1"}]}`,
	// f1, f2 with a default
	"schema2": `{"type":"record","name":"myrecord","fields":[{"type":"string","name":"f1"},{"type":"string","name":"f2","default":"foo"}]}`,
	// f1, f2 without a default
	"schema3": `{"type":"record","name":"myrecord","fields":[{"type":"string","name":"f1"},{"type":"string","name":"f2"}]}`,
	// f1 renamed f1_new with alias f1
	"schema4": `{"type":"record","name":"myrecord","fields":[{"type":"string","name":"f1_new","aliases":["f1"]}]}`,
	// f1 a union null|string
	"schema6": `{"type":"record","name":"myrecord","fields":[{"type":["null","string"],"name":"f1","doc":"doc of f1"}]}`,
	// f1 a union null|string|int
	"schema7": `{"type":"record","name":"myrecord","fields":[{"type":["null","string","int"],"name":"f1","doc":"doc of f1"}]}`,
	// f1, f2 and f3 with defaults
	"schema8": `{"type":"record","name":"myrecord","fields":[{"type":"string","name":"f1"},{"type":"string","name":"f2","default":"foo"},{"type":"string","name":"f3","default":"bar"}]}`,
}

// httpDo sends method path with body (JSON-encoded unless a string or nil)
// to the registry at addr and returns the status and the decoded body.
func httpDo(t *testing.T, addr, method, path string, body any) (int, map[string]any, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, "http://"+addr+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(raw, &m) // some answers are arrays or numbers
	return resp.StatusCode, m, raw
}

// Confluent's Avro compatibility cases, each level, with the registry's
// HTTP verdicts: the compatibility endpoint's is_compatible and the
// registration's 200 or 409. The previous schemas are registered in order
// under NONE, then the subject's level is set.
func TestAvroCompatibilityConfluentCases(t *testing.T) {
	_, cl := startRegistry(t, t.TempDir())
	addr := registryAddr(t, cl)
	cases := []struct {
		level      string
		next       string
		prev       []string
		compatible bool
		why        string
	}{
		{"BACKWARD", "schema2", []string{"schema1"}, true, "adding a field with default"},
		{"BACKWARD", "schema3", []string{"schema1"}, false, "adding a field w/o default"},
		{"BACKWARD", "schema4", []string{"schema1"}, true, "changing field name with alias"},
		{"BACKWARD", "schema6", []string{"schema1"}, true, "evolving a field type to a union"},
		{"BACKWARD", "schema1", []string{"schema6"}, false, "removing a type from a union"},
		{"BACKWARD", "schema7", []string{"schema6"}, true, "adding a new type in union"},
		{"BACKWARD", "schema6", []string{"schema7"}, false, "removing a type from a union"},
		{"BACKWARD", "schema3", []string{"schema1", "schema2"}, true, "only the latest is checked"},
		{"BACKWARD_TRANSITIVE", "schema8", []string{"schema1", "schema2"}, true, "iteratively adding fields with defaults"},
		{"BACKWARD_TRANSITIVE", "schema2", []string{"schema1"}, true, "adding a field with default"},
		{"BACKWARD_TRANSITIVE", "schema3", []string{"schema2"}, true, "removing a default, not transitively"},
		{"BACKWARD_TRANSITIVE", "schema3", []string{"schema2", "schema1"}, false, "removing a default, transitively"},
		{"FORWARD", "schema2", []string{"schema1"}, true, "adding a field"},
		{"FORWARD", "schema3", []string{"schema1"}, true, "adding a field w/o default"},
		{"FORWARD", "schema3", []string{"schema2"}, true, "removing a default"},
		{"FORWARD", "schema2", []string{"schema3"}, true, "adding a default"},
		{"FORWARD", "schema1", []string{"schema3", "schema2"}, true, "only the latest is checked"},
		{"FORWARD_TRANSITIVE", "schema1", []string{"schema8", "schema2"}, true, "iteratively removing fields with defaults"},
		{"FORWARD_TRANSITIVE", "schema2", []string{"schema3"}, true, "adding default to a field"},
		{"FORWARD_TRANSITIVE", "schema1", []string{"schema2"}, true, "removing a field with a default"},
		{"FORWARD_TRANSITIVE", "schema1", []string{"schema2", "schema3"}, false, "removing a default, transitively"},
		{"FULL", "schema2", []string{"schema1"}, true, "adding a field with default"},
		{"FULL", "schema3", []string{"schema1", "schema2"}, true, "only the latest is checked"},
		{"FULL", "schema1", []string{"schema3", "schema2"}, true, "only the latest is checked"},
		{"FULL_TRANSITIVE", "schema8", []string{"schema1", "schema2"}, true, "iteratively adding fields with defaults"},
		{"FULL_TRANSITIVE", "schema1", []string{"schema8", "schema2"}, true, "iteratively removing fields with defaults"},
		{"FULL_TRANSITIVE", "schema2", []string{"schema3"}, true, "adding default to a field"},
		{"FULL_TRANSITIVE", "schema1", []string{"schema2"}, true, "removing a field with a default"},
		{"FULL_TRANSITIVE", "schema2", []string{"schema1"}, true, "adding a field with default"},
		{"FULL_TRANSITIVE", "schema3", []string{"schema2"}, true, "removing a default from a field"},
		{"FULL_TRANSITIVE", "schema3", []string{"schema2", "schema1"}, false, "transitively adding a field without a default"},
		{"FULL_TRANSITIVE", "schema1", []string{"schema2", "schema3"}, false, "transitively removing a field without a default"},
		{"NONE", "schema3", []string{"schema1"}, true, "NONE checks nothing"},
	}
	for i, tc := range cases {
		t.Run(fmt.Sprintf("%02d/%s/%s-after-%v", i, tc.level, tc.next, tc.prev), func(t *testing.T) {
			subject := fmt.Sprintf("compat-%d", i)
			p := "/subjects/" + url.PathEscape(subject)
			if st, _, raw := httpDo(t, addr, "PUT", "/config/"+subject, map[string]string{"compatibility": "NONE"}); st != 200 {
				t.Fatalf("set NONE: %d %s", st, raw)
			}
			for _, name := range tc.prev {
				if st, _, raw := httpDo(t, addr, "POST", p+"/versions", map[string]string{"schema": confluentAvro[name]}); st != 200 {
					t.Fatalf("register %s: %d %s", name, st, raw)
				}
			}
			if st, _, raw := httpDo(t, addr, "PUT", "/config/"+subject, map[string]string{"compatibility": tc.level}); st != 200 {
				t.Fatalf("set %s: %d %s", tc.level, st, raw)
			}
			st, m, raw := httpDo(t, addr, "POST", "/compatibility"+p+"/versions?verbose=true", map[string]string{"schema": confluentAvro[tc.next]})
			if st != 200 || m["is_compatible"] != tc.compatible {
				t.Fatalf("%s: compatibility answered %d %s, want is_compatible %v", tc.why, st, raw, tc.compatible)
			}
			st, m, raw = httpDo(t, addr, "POST", p+"/versions", map[string]string{"schema": confluentAvro[tc.next]})
			wantStatus := 200
			if !tc.compatible {
				wantStatus = 409
			}
			if st != wantStatus {
				t.Fatalf("%s: register answered %d %s, want %d", tc.why, st, raw, wantStatus)
			}
			if !tc.compatible && m["error_code"] != float64(409) {
				t.Fatalf("register: error body %s, want error_code 409", raw)
			}
		})
	}
}
