package schemareg_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
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
// HTTP verdicts: the compatibility endpoint's is_compatible against every
// version the level checks (/versions) and against the latest only
// (/versions/latest: Confluent checks the one version named, whatever the
// level), and the registration's 200 or 409. The previous schemas are
// registered in order under NONE, then the subject's level is set; after
// the verdict, NONE takes the schema whatever it is.
//
// The cases are those of Confluent's AvroCompatibilityTest; the rows
// marked "derived" put its pairwise facts in an order where checking
// every version and checking the latest differ.
func TestAvroCompatibilityConfluentCases(t *testing.T) {
	_, cl := startRegistry(t, t.TempDir())
	addr := registryAddr(t, cl)
	cases := []struct {
		level      string
		next       string
		prev       []string
		compatible bool // against the versions the level checks
		latest     bool // against the latest version only
		why        string
	}{
		{"BACKWARD", "schema2", []string{"schema1"}, true, true, "adding a field with default"},
		{"BACKWARD", "schema3", []string{"schema1"}, false, false, "adding a field w/o default"},
		{"BACKWARD", "schema4", []string{"schema1"}, true, true, "changing field name with alias"},
		{"BACKWARD", "schema6", []string{"schema1"}, true, true, "evolving a field type to a union"},
		{"BACKWARD", "schema1", []string{"schema6"}, false, false, "removing a type from a union"},
		{"BACKWARD", "schema7", []string{"schema6"}, true, true, "adding a new type in union"},
		{"BACKWARD", "schema6", []string{"schema7"}, false, false, "removing a type from a union"},
		{"BACKWARD", "schema3", []string{"schema1", "schema2"}, true, true, "only the latest is checked"},
		{"BACKWARD_TRANSITIVE", "schema8", []string{"schema1", "schema2"}, true, true, "iteratively adding fields with defaults"},
		{"BACKWARD_TRANSITIVE", "schema2", []string{"schema1"}, true, true, "adding a field with default"},
		{"BACKWARD_TRANSITIVE", "schema3", []string{"schema2"}, true, true, "removing a default, not transitively"},
		{"BACKWARD_TRANSITIVE", "schema3", []string{"schema2", "schema1"}, false, false, "removing a default, transitively"},
		{"BACKWARD_TRANSITIVE", "schema3", []string{"schema1", "schema2"}, false, true, "derived: schema1 is checked, not by /versions/latest"},
		{"FORWARD", "schema2", []string{"schema1"}, true, true, "adding a field"},
		{"FORWARD", "schema3", []string{"schema1"}, true, true, "adding a field w/o default"},
		{"FORWARD", "schema3", []string{"schema2"}, true, true, "removing a default"},
		{"FORWARD", "schema2", []string{"schema3"}, true, true, "adding a default"},
		{"FORWARD", "schema1", []string{"schema3", "schema2"}, true, true, "only the latest is checked"},
		{"FORWARD_TRANSITIVE", "schema1", []string{"schema8", "schema2"}, true, true, "iteratively removing fields with defaults"},
		{"FORWARD_TRANSITIVE", "schema2", []string{"schema3"}, true, true, "adding default to a field"},
		{"FORWARD_TRANSITIVE", "schema1", []string{"schema2"}, true, true, "removing a field with a default"},
		{"FORWARD_TRANSITIVE", "schema1", []string{"schema2", "schema3"}, false, false, "removing a default, transitively"},
		{"FORWARD_TRANSITIVE", "schema1", []string{"schema3", "schema2"}, false, true, "derived: schema3 is checked, not by /versions/latest"},
		{"FULL", "schema2", []string{"schema1"}, true, true, "adding a field with default"},
		{"FULL", "schema3", []string{"schema1", "schema2"}, true, true, "only the latest is checked"},
		{"FULL", "schema1", []string{"schema3", "schema2"}, true, true, "only the latest is checked"},
		{"FULL_TRANSITIVE", "schema8", []string{"schema1", "schema2"}, true, true, "iteratively adding fields with defaults"},
		{"FULL_TRANSITIVE", "schema1", []string{"schema8", "schema2"}, true, true, "iteratively removing fields with defaults"},
		{"FULL_TRANSITIVE", "schema2", []string{"schema3"}, true, true, "adding default to a field"},
		{"FULL_TRANSITIVE", "schema1", []string{"schema2"}, true, true, "removing a field with a default"},
		{"FULL_TRANSITIVE", "schema2", []string{"schema1"}, true, true, "adding a field with default"},
		{"FULL_TRANSITIVE", "schema3", []string{"schema2"}, true, true, "removing a default from a field"},
		{"FULL_TRANSITIVE", "schema3", []string{"schema2", "schema1"}, false, false, "transitively adding a field without a default"},
		{"FULL_TRANSITIVE", "schema1", []string{"schema2", "schema3"}, false, false, "transitively removing a field without a default"},
		{"FULL_TRANSITIVE", "schema3", []string{"schema1", "schema2"}, false, true, "derived: schema1 is checked, not by /versions/latest"},
		{"NONE", "schema3", []string{"schema1"}, true, true, "NONE checks nothing"},
		{"NONE", "schema6", []string{"schema7"}, true, true, "NONE checks nothing"},
	}
	for i, tc := range cases {
		t.Run(fmt.Sprintf("%02d/%s/%s-after-%v", i, tc.level, tc.next, tc.prev), func(t *testing.T) {
			subject := fmt.Sprintf("compat-%d", i)
			p := "/subjects/" + url.PathEscape(subject)
			setLevel := func(level string) {
				t.Helper()
				if st, _, raw := httpDo(t, addr, "PUT", "/config/"+subject, map[string]string{"compatibility": level}); st != 200 {
					t.Fatalf("set %s: %d %s", level, st, raw)
				}
			}
			setLevel("NONE")
			for _, name := range tc.prev {
				if st, _, raw := httpDo(t, addr, "POST", p+"/versions", map[string]string{"schema": confluentAvro[name]}); st != 200 {
					t.Fatalf("register %s: %d %s", name, st, raw)
				}
			}
			setLevel(tc.level)
			next := map[string]string{"schema": confluentAvro[tc.next]}
			st, m, raw := httpDo(t, addr, "POST", "/compatibility"+p+"/versions?verbose=true", next)
			if st != 200 || m["is_compatible"] != tc.compatible {
				t.Fatalf("%s: /versions answered %d %s, want is_compatible %v", tc.why, st, raw, tc.compatible)
			}
			if msgs, _ := m["messages"].([]any); tc.compatible == (len(msgs) > 0) {
				t.Fatalf("%s: verbose messages %v with is_compatible %v", tc.why, msgs, tc.compatible)
			}
			st, m, raw = httpDo(t, addr, "POST", "/compatibility"+p+"/versions/latest", next)
			if st != 200 || m["is_compatible"] != tc.latest {
				t.Fatalf("%s: /versions/latest answered %d %s, want is_compatible %v", tc.why, st, raw, tc.latest)
			}
			st, m, raw = httpDo(t, addr, "POST", p+"/versions", next)
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
			if tc.compatible {
				return
			}
			// NONE takes what the level refused.
			setLevel("NONE")
			st, m, raw = httpDo(t, addr, "POST", "/compatibility"+p+"/versions", next)
			if st != 200 || m["is_compatible"] != true {
				t.Fatalf("NONE: /versions answered %d %s, want is_compatible true", st, raw)
			}
			if st, m, raw = httpDo(t, addr, "POST", p+"/versions", next); st != 200 || m["id"] == nil {
				t.Fatalf("NONE: register answered %d %s, want 200", st, raw)
			}
		})
	}
}

// The global-level scenarios of Confluent's RestApiCompatibilityTest
// (testCompatibilityLevelChangeToNone, testCompatibilityLevelChangeToBackward):
// the default level is BACKWARD; a field without a default is refused with
// 409, taken once the global level is NONE; under FORWARD it is taken,
// and back under BACKWARD another field without a default is refused and
// one with a default is taken. Ids are 1, 2, 3 in order.
func TestAvroCompatibilityConfluentGlobalLevel(t *testing.T) {
	_, cl := startRegistry(t, t.TempDir())
	addr := registryAddr(t, cl)
	f := func(fields ...string) string {
		return `{"type":"record","name":"myrecord","fields":[` + strings.Join(fields, ",") + `]}`
	}
	const f1, f2, f3, f3d = `{"type":"string","name":"f1"}`, `{"type":"string","name":"f2"}`, `{"type":"string","name":"f3"}`, `{"type":"string","name":"f3","default":"foo"}`
	register := func(subject, schema string, wantStatus int, wantID int) {
		t.Helper()
		st, m, raw := httpDo(t, addr, "POST", "/subjects/"+subject+"/versions", map[string]string{"schema": schema})
		if st != wantStatus {
			t.Fatalf("register %s under %s: %d %s, want %d", schema, subject, st, raw, wantStatus)
		}
		if wantID > 0 && m["id"] != float64(wantID) {
			t.Fatalf("register %s under %s: %s, want id %d", schema, subject, raw, wantID)
		}
	}
	setGlobal := func(level string) {
		t.Helper()
		st, m, raw := httpDo(t, addr, "PUT", "/config", map[string]string{"compatibility": level})
		if st != 200 || m["compatibility"] != level {
			t.Fatalf("PUT /config %s: %d %s", level, st, raw)
		}
		if st, m, raw := httpDo(t, addr, "GET", "/config", nil); st != 200 || m["compatibilityLevel"] != level {
			t.Fatalf("GET /config after %s: %d %s", level, st, raw)
		}
	}
	if st, m, raw := httpDo(t, addr, "GET", "/config", nil); st != 200 || m["compatibilityLevel"] != "BACKWARD" {
		t.Fatalf("default level: %d %s, want BACKWARD", st, raw)
	}
	// testCompatibilityLevelChangeToNone
	register("none", f(f1), 200, 1)
	register("none", f(f1, f2), 409, 0)
	setGlobal("NONE")
	register("none", f(f1, f2), 200, 2)
	// testCompatibilityLevelChangeToBackward, on a subject of its own.
	setGlobal("BACKWARD")
	register("backward", f(f1), 200, 1) // the same schema: the same id
	setGlobal("FORWARD")
	register("backward", f(f1, f2), 200, 2)
	setGlobal("BACKWARD")
	register("backward", f(f1, f2, f3), 409, 0)
	register("backward", f(f1, f2, f3d), 200, 3)
}
