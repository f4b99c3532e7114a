package schemareg_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// Hostile input beyond TestHostileInput's bodies: a schema wide rather
// than deep, a subject referencing itself (the only cycle the API can be
// asked to make: a reference must name a version that exists), more
// references than a registration may pull in, a chain of references too
// deep, and an Authorization header over the header limit. Each gets a
// 4xx (or, for the wide schema, is registered), never a 5xx or a crash,
// and the registry answers afterwards.
func TestHostileReferencesAndHeaders(t *testing.T) {
	_, cl := startRegistry(t, t.TempDir())
	addr := registryAddr(t, cl)
	post := func(path string, body any) (int, map[string]any, []byte) {
		t.Helper()
		return httpDo(t, addr, "POST", path, body)
	}

	t.Run("wide avro schema", func(t *testing.T) {
		var f strings.Builder
		for i := range 20000 {
			if i > 0 {
				f.WriteByte(',')
			}
			fmt.Fprintf(&f, `{"name":"f%d","type":"int"}`, i)
		}
		st, _, raw := post("/subjects/wide/versions", map[string]any{"schema": `{"type":"record","name":"W","fields":[` + f.String() + `]}`})
		if st != 200 {
			t.Fatalf("20000 fields: %d %.300s", st, raw)
		}
	})
	t.Run("self reference", func(t *testing.T) {
		st, m, raw := post("/subjects/self/versions", map[string]any{
			"schema":     `{"type":"record","name":"S","fields":[{"name":"s","type":"S2"}]}`,
			"references": []map[string]any{{"name": "S2", "subject": "self", "version": 1}}})
		if st != 422 || m["error_code"] != float64(42201) {
			t.Fatalf("self reference: %d %s, want 422/42201", st, raw)
		}
	})
	t.Run("too many references", func(t *testing.T) {
		var refs []map[string]any
		var fields []string
		for i := range 257 {
			name := fmt.Sprintf("F%d", i)
			if st, _, raw := post("/subjects/many-"+name+"/versions", map[string]any{"schema": fmt.Sprintf(`{"type":"fixed","name":"%s","size":1}`, name)}); st != 200 {
				t.Fatalf("register %s: %d %s", name, st, raw)
			}
			refs = append(refs, map[string]any{"name": name, "subject": "many-" + name, "version": 1})
			fields = append(fields, fmt.Sprintf(`{"name":"f%d","type":"%s"}`, i, name))
		}
		st, m, raw := post("/subjects/many/versions", map[string]any{
			"schema":     `{"type":"record","name":"Many","fields":[` + strings.Join(fields, ",") + `]}`,
			"references": refs})
		if st != 422 || m["error_code"] != float64(42201) || !strings.Contains(fmt.Sprint(m["message"]), "references") {
			t.Fatalf("257 references: %d %.300s, want 422/42201", st, raw)
		}
	})
	t.Run("reference chain too deep", func(t *testing.T) {
		prev := ""
		var st int
		var m map[string]any
		var raw []byte
		for i := range 40 {
			name := fmt.Sprintf("D%d", i)
			body := map[string]any{"schema": fmt.Sprintf(`{"type":"record","name":"%s","fields":[]}`, name)}
			if prev != "" {
				body["schema"] = fmt.Sprintf(`{"type":"record","name":"%s","fields":[{"name":"p","type":"%s"}]}`, name, prev)
				body["references"] = []map[string]any{{"name": prev, "subject": "deep-" + prev, "version": 1}}
			}
			st, m, raw = post("/subjects/deep-"+name+"/versions", body)
			if st != 200 {
				break
			}
			prev = name
		}
		if st != 422 || m["error_code"] != float64(42201) || !strings.Contains(fmt.Sprint(m["message"]), "deeper") {
			t.Fatalf("a chain of 40 references: last answer %d %.300s, want 422/42201 'nested deeper'", st, raw)
		}
	})
	t.Run("authorization header over the limit", func(t *testing.T) {
		req, _ := http.NewRequest("GET", "http://"+addr+"/subjects", nil)
		req.Header.Set("Authorization", "Basic "+strings.Repeat("A", 128<<10))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("128 KiB header: %d, want 431", resp.StatusCode)
		}
	})
	if st, _, raw := httpDo(t, addr, "GET", "/subjects", nil); st != 200 {
		t.Fatalf("after the hostile requests: %d %s", st, raw)
	}
}
