package schemareg_test

import (
	"fmt"
	"strings"
	"testing"
)

// Caller-chosen ids and versions as Confluent's registry (a Java int, and
// KafkaSchemaRegistry's checkRegisterMode): ids and versions above 2^31-1
// are refused and never become the writer's next id; an id needs IMPORT
// (0 is a real id), IMPORT needs an id, -1 means none, and outside IMPORT
// an explicit version must be the next one.
func TestImportIDsAndVersions(t *testing.T) {
	_, cl := startRegistry(t, t.TempDir())
	addr := registryAddr(t, cl)
	post := func(subject string, body map[string]any) (int, map[string]any, string) {
		t.Helper()
		st, m, raw := httpDo(t, addr, "POST", "/subjects/"+subject+"/versions", body)
		return st, m, string(raw)
	}
	want := func(name string, st int, m map[string]any, raw string, status int, code float64) {
		t.Helper()
		if st != status || (code != 0 && m["error_code"] != code) {
			t.Fatalf("%s: %d %s, want %d/%v", name, st, raw, status, code)
		}
	}

	// READWRITE: no id (-1 is none), a version that is the next one.
	st, m, raw := post("rw", map[string]any{"schema": `"int"`, "id": -1})
	want("id -1 in READWRITE", st, m, raw, 200, 0)
	st, m, raw = post("rw", map[string]any{"schema": `"long"`, "version": 5})
	want("version not next", st, m, raw, 422, 42201)
	st, m, raw = post("rw", map[string]any{"schema": `"long"`, "version": 2})
	want("version next", st, m, raw, 200, 0)
	st, m, raw = post("rw", map[string]any{"schema": `"float"`, "id": 0})
	want("id 0 outside IMPORT", st, m, raw, 422, 42205)

	if st, _, raw := httpDo(t, addr, "PUT", "/mode/imp", map[string]any{"mode": "IMPORT"}); st != 200 {
		t.Fatalf("IMPORT: %d %s", st, raw)
	}
	st, m, raw = post("imp", map[string]any{"schema": `"double"`, "id": 2147483648})
	want("id 2^31", st, m, raw, 422, 42201)
	st, m, raw = post("imp", map[string]any{"schema": `"double"`, "id": 7, "version": 2147483648})
	want("version 2^31", st, m, raw, 422, 42202)
	st, m, raw = post("imp", map[string]any{"schema": `"double"`})
	want("IMPORT without an id", st, m, raw, 422, 42205)
	st, m, raw = post("imp", map[string]any{"schema": `"double"`, "id": 0})
	want("id 0 in IMPORT", st, m, raw, 200, 0)
	if m["id"] != float64(0) {
		t.Fatalf("id 0 in IMPORT answered %s", raw)
	}
	if st, _, raw := httpDo(t, addr, "GET", "/schemas/ids/0", nil); st != 200 {
		t.Fatalf("GET id 0: %d %s", st, raw)
	}
	st, m, raw = post("imp", map[string]any{"schema": `"bytes"`, "id": 2147483647})
	want("id 2^31-1", st, m, raw, 200, 0)
	// The largest id is taken: the writer has no next id, and says so
	// rather than wrapping or going past the 4-byte framing.
	st, m, raw = post("rw", map[string]any{"schema": `"string"`})
	if st == 200 {
		if id, _ := m["id"].(float64); id > 2147483647 || id < 0 {
			t.Fatalf("next id after 2^31-1: %s", raw)
		}
	}
	if st, _, raw := httpDo(t, addr, "GET", "/schemas/ids/2147483648", nil); st != 404 {
		t.Fatalf("GET id 2^31: %d %s", st, raw)
	}
}

// A schema too large for its record in _schemas is Confluent's
// SchemaTooLargeException (422, 42209), not a store error: over 1 MiB it
// is refused before parsing, and one just under that which still exceeds
// the producer's limit is refused at the append.
func TestSchemaTooLarge(t *testing.T) {
	_, cl := startRegistry(t, t.TempDir())
	addr := registryAddr(t, cl)
	withDoc := func(n int) string {
		return `{"type":"record","name":"Big","doc":"` + strings.Repeat("a", n) + `","fields":[]}`
	}
	for _, tc := range []struct {
		name string
		doc  int
	}{
		{"over 1 MiB", 1500000},
		{"over the producer's limit", 1040000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, m, raw := httpDo(t, addr, "POST", "/subjects/big/versions", map[string]any{"schema": withDoc(tc.doc)})
			if st != 422 || m["error_code"] != float64(42209) {
				t.Fatalf("%d %.300s, want 422/42209", st, raw)
			}
		})
	}
	if st, _, raw := httpDo(t, addr, "POST", "/subjects/big/versions", map[string]any{"schema": withDoc(1000)}); st != 200 {
		t.Fatalf("a small one afterwards: %d %s", st, raw)
	}
}

// Soft-deleting a subject, or its last live version, deletes its config
// and mode too, as Confluent's deleteSubject (deleteMode, deleteConfig).
func TestSoftDeleteClearsConfigAndMode(t *testing.T) {
	_, cl := startRegistry(t, t.TempDir())
	addr := registryAddr(t, cl)
	for _, tc := range []struct{ name, delete string }{
		{"subject", "/subjects/%s"},
		{"last version", "/subjects/%s/versions/1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := "del-" + strings.ReplaceAll(tc.name, " ", "-")
			do := func(method, path string, body any, want int) map[string]any {
				t.Helper()
				st, m, raw := httpDo(t, addr, method, path, body)
				if st != want {
					t.Fatalf("%s %s: %d %s, want %d", method, path, st, raw, want)
				}
				return m
			}
			do("POST", "/subjects/"+s+"/versions", map[string]any{"schema": `"int"`}, 200)
			do("PUT", "/config/"+s, map[string]any{"compatibility": "NONE"}, 200)
			do("PUT", "/mode/"+s, map[string]any{"mode": "READWRITE"}, 200)
			do("DELETE", fmt.Sprintf(tc.delete, s), nil, 200)
			if m := do("GET", "/config/"+s, nil, 404); m["error_code"] != float64(40408) {
				t.Fatalf("config after delete: %v, want 40408", m)
			}
			if m := do("GET", "/mode/"+s, nil, 404); m["error_code"] != float64(40409) {
				t.Fatalf("mode after delete: %v, want 40409", m)
			}
		})
	}
}

// A subject name with invalid UTF-8 is the name with U+FFFD for each bad
// byte, as it is stored (the key is JSON): registered, it is found again
// by the same raw name. A name with NUL is refused (42208).
func TestSubjectNameEncoding(t *testing.T) {
	_, cl := startRegistry(t, t.TempDir())
	addr := registryAddr(t, cl)
	if st, _, raw := httpDo(t, addr, "POST", "/subjects/bad%FF%FEname/versions", map[string]any{"schema": `"int"`}); st != 200 {
		t.Fatalf("register: %d %s", st, raw)
	}
	for _, path := range []string{"/subjects/bad%FF%FEname/versions/1", "/subjects/bad%EF%BF%BD%EF%BF%BDname/versions/1"} {
		st, m, raw := httpDo(t, addr, "GET", path, nil)
		if st != 200 || m["subject"] != "bad\uFFFD\uFFFDname" {
			t.Fatalf("GET %s: %d %s", path, st, raw)
		}
	}
	if st, m, raw := httpDo(t, addr, "POST", "/subjects/nul%00name/versions", map[string]any{"schema": `"int"`}); st != 422 || m["error_code"] != float64(42208) {
		t.Fatalf("NUL: %d %s, want 422/42208", st, raw)
	}
}

// GET /subjects?deletedOnly=true lists only the soft-deleted subjects.
func TestSubjectsDeletedOnly(t *testing.T) {
	_, cl := startRegistry(t, t.TempDir())
	addr := registryAddr(t, cl)
	for _, s := range []string{"live", "gone"} {
		if st, _, raw := httpDo(t, addr, "POST", "/subjects/"+s+"/versions", map[string]any{"schema": `"int"`}); st != 200 {
			t.Fatalf("register %s: %d %s", s, st, raw)
		}
	}
	if st, _, raw := httpDo(t, addr, "DELETE", "/subjects/gone", nil); st != 200 {
		t.Fatalf("delete: %d %s", st, raw)
	}
	for _, tc := range []struct{ query, want string }{
		{"", `["live"]`},
		{"?deleted=true", `["gone","live"]`},
		{"?deletedOnly=true", `["gone"]`},
	} {
		st, _, raw := httpDo(t, addr, "GET", "/subjects"+tc.query, nil)
		if st != 200 || strings.TrimSpace(string(raw)) != tc.want {
			t.Fatalf("GET /subjects%s: %d %s, want %s", tc.query, st, raw, tc.want)
		}
	}
}
