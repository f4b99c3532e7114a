package schemareg_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
)

// Hostile bodies get a 4xx with Confluent's error body, never a crash, a
// 5xx or unbounded memory: a body over the limit, deep nesting (in the
// envelope and in the schema), bad JSON, references to nothing, a
// reference to a soft-deleted version, an unknown type, a JSON Schema
// $ref to a file, and the registry still serves afterwards.
func TestHostileInput(t *testing.T) {
	_, cl := startRegistry(t, t.TempDir())
	addr := registryAddr(t, cl)
	deepAvro := strings.Repeat(`{"type":"array","items":`, 10000) + `"int"` + strings.Repeat(`}`, 10000)
	deepEnvelope := `{"schema":"\"int\"","x":` + strings.Repeat(`[`, 100000) + strings.Repeat(`]`, 100000) + `}`
	deepJSON := strings.Repeat(`{"items":`, 5000) + `{}` + strings.Repeat(`}`, 5000)
	deepProto := `syntax = "proto3"; ` + strings.Repeat(`message M { `, 3000) + strings.Repeat(`} `, 3000)
	huge := `{"schema":"` + strings.Repeat("a", 5<<20) + `"}`

	if st, _, raw := httpDo(t, addr, "POST", "/subjects/base/versions", map[string]any{"schema": `{"type":"record","name":"Base","fields":[{"name":"a","type":"int"}]}`}); st != 200 {
		t.Fatalf("register base: %d %s", st, raw)
	}
	if st, _, raw := httpDo(t, addr, "POST", "/subjects/gone/versions", map[string]any{"schema": `{"type":"fixed","name":"Gone","size":4}`}); st != 200 {
		t.Fatalf("register gone: %d %s", st, raw)
	}
	if st, _, raw := httpDo(t, addr, "DELETE", "/subjects/gone", nil); st != 200 {
		t.Fatalf("soft delete gone: %d %s", st, raw)
	}
	for _, tc := range []struct {
		name     string
		path     string
		body     any
		status   int
		code     float64
		contains string
	}{
		{"body over 4 MiB", "/subjects/h/versions", huge, 413, 413, "larger than"},
		{"deeply nested avro", "/subjects/h/versions", map[string]any{"schema": deepAvro}, 422, 42201, "nested deeper"},
		{"deeply nested envelope", "/subjects/h/versions", deepEnvelope, 400, 400, ""},
		{"deeply nested json schema", "/subjects/h/versions", map[string]any{"schema": deepJSON, "schemaType": "JSON"}, 422, 42201, "nested deeper"},
		{"deeply nested protobuf", "/subjects/h/versions", map[string]any{"schema": deepProto, "schemaType": "PROTOBUF"}, 422, 42201, "nested deeper"},
		{"not json", "/subjects/h/versions", `{"schema":`, 400, 400, ""},
		{"empty schema", "/subjects/h/versions", map[string]any{"schema": ""}, 422, 42201, ""},
		{"unknown type", "/subjects/h/versions", map[string]any{"schema": `"int"`, "schemaType": "XML"}, 422, 42201, "unknown schema type"},
		{"reference to no subject", "/subjects/h/versions", map[string]any{"schema": `{"type":"record","name":"R","fields":[{"name":"b","type":"Base"}]}`,
			"references": []map[string]any{{"name": "Base", "subject": "nosuch", "version": 1}}}, 422, 42201, "not found"},
		{"reference to no version", "/subjects/h/versions", map[string]any{"schema": `{"type":"record","name":"R","fields":[{"name":"b","type":"Base"}]}`,
			"references": []map[string]any{{"name": "Base", "subject": "base", "version": 99}}}, 422, 42201, "not found"},
		{"reference to a soft-deleted version", "/subjects/h/versions", map[string]any{"schema": `{"type":"record","name":"R","fields":[{"name":"g","type":"Gone"}]}`,
			"references": []map[string]any{{"name": "Gone", "subject": "gone", "version": 1}}}, 422, 42201, "not found"},
		{"json schema ref to a file", "/subjects/h/versions", map[string]any{"schema": `{"$ref":"file:///etc/passwd"}`, "schemaType": "JSON"}, 422, 42201, ""},
		{"protobuf import of a file", "/subjects/h/versions", map[string]any{"schema": `syntax = "proto3"; import "/etc/passwd"; message M {}`, "schemaType": "PROTOBUF"}, 422, 42201, ""},
		{"bad version", "/compatibility/subjects/base/versions/0", map[string]any{"schema": `"int"`}, 422, 42202, "not a valid version"},
		{"bad compatibility", "/config/base", nil, 0, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.status == 0 {
				st, m, raw := httpDo(t, addr, "PUT", tc.path, map[string]any{"compatibility": "SIDEWAYS"})
				if st != 422 || m["error_code"] != float64(42203) {
					t.Fatalf("PUT %s: %d %s, want 422/42203", tc.path, st, raw)
				}
				return
			}
			st, m, raw := httpDo(t, addr, "POST", tc.path, tc.body)
			if len(raw) > 300 {
				raw = raw[:300]
			}
			if st != tc.status || m["error_code"] != tc.code {
				t.Fatalf("%d %s, want %d with error_code %v", st, raw, tc.status, tc.code)
			}
			if msg, _ := m["message"].(string); !strings.Contains(msg, tc.contains) {
				t.Fatalf("message %q does not say %q", msg, tc.contains)
			}
		})
	}
	if subjects, err := cl.Subjects(context.Background()); err != nil || len(subjects) != 1 || subjects[0] != "base" {
		t.Fatalf("after hostile input: subjects %v %v", subjects, err)
	}
}

// References: an Avro record using a named type registered under another
// subject; the referenced version cannot be deleted while referenced;
// referencedby lists the user.
func TestReferences(t *testing.T) {
	_, cl := startRegistry(t, t.TempDir())
	c := ctx(t)
	addr := registryAddr(t, cl)
	_, err := cl.CreateSchema(c, "base", sr.Schema{Schema: `{"type":"record","name":"Base","namespace":"x","fields":[{"name":"a","type":"int"}]}`})
	if err != nil {
		t.Fatal(err)
	}
	user, err := cl.CreateSchema(c, "user", sr.Schema{
		Schema:     `{"type":"record","name":"User","namespace":"x","fields":[{"name":"b","type":"x.Base"}]}`,
		References: []sr.SchemaReference{{Name: "x.Base", Subject: "base", Version: 1}},
	})
	if err != nil {
		t.Fatalf("register with a reference: %v", err)
	}
	got, err := cl.SchemaByID(c, user.ID)
	if err != nil || len(got.References) != 1 || got.References[0].Subject != "base" {
		t.Fatalf("schema by id: %+v %v", got, err)
	}
	st, _, raw := httpDo(t, addr, "GET", "/subjects/base/versions/1/referencedby", nil)
	if st != 200 || strings.TrimSpace(string(raw)) != fmt.Sprintf("[%d]", user.ID) {
		t.Fatalf("referencedby: %d %s, want [%d]", st, raw, user.ID)
	}
	if err := cl.DeleteSchema(c, "base", 1, sr.SoftDelete); srCode(err) != 42206 {
		t.Fatalf("delete a referenced version: %v, want 42206", err)
	}
	// Without the reference, the named type is unknown.
	if _, err := cl.CreateSchema(c, "user2", sr.Schema{Schema: `{"type":"record","name":"U2","fields":[{"name":"b","type":"x.Base"}]}`}); srCode(err) != 42201 {
		t.Fatalf("unresolved named type: %v, want 42201", err)
	}
}

// Protobuf and JSON Schema register, dedupe and check the documented
// compatibility rules.
func TestProtobufAndJSONSchema(t *testing.T) {
	_, cl := startRegistry(t, t.TempDir())
	c := ctx(t)
	const proto1 = `syntax = "proto3"; package p; message Order { string id = 1; int64 amount = 2; }`
	const proto2 = `syntax = "proto3"; package p; message Order { string id = 1; int64 amount = 2; string note = 3; }`
	const protoBad = `syntax = "proto3"; package p; message Order { string id = 1; string amount = 2; }`
	s1, err := cl.CreateSchema(c, "orders-proto", sr.Schema{Schema: proto1, Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatal(err)
	}
	if again, err := cl.CreateSchema(c, "orders-proto", sr.Schema{Schema: proto1, Type: sr.TypeProtobuf}); err != nil || again.ID != s1.ID {
		t.Fatalf("same proto again: %+v %v", again, err)
	}
	// Whitespace and comments do not make another schema.
	reformatted := "// orders\nsyntax = \"proto3\";\npackage p;\n\nmessage Order {\n  string id = 1;\n  int64 amount = 2; // cents\n}\n"
	if again, err := cl.CreateSchema(c, "orders-proto", sr.Schema{Schema: reformatted, Type: sr.TypeProtobuf}); err != nil || again.ID != s1.ID || again.Version != 1 {
		t.Fatalf("reformatted proto: %+v %v, want id %d version 1", again, err, s1.ID)
	}
	if _, err := cl.CreateSchema(c, "orders-proto", sr.Schema{Schema: proto2, Type: sr.TypeProtobuf}); err != nil {
		t.Fatalf("adding a field: %v", err)
	}
	if _, err := cl.CreateSchema(c, "orders-proto", sr.Schema{Schema: protoBad, Type: sr.TypeProtobuf}); srCode(err) != 409 {
		t.Fatalf("int64 -> string: %v, want 409", err)
	}
	if _, err := cl.CreateSchema(c, "bad-proto", sr.Schema{Schema: `syntax = "proto3"; message {`, Type: sr.TypeProtobuf}); srCode(err) != 42201 {
		t.Fatalf("invalid proto: %v, want 42201", err)
	}

	const json1 = `{"type":"object","properties":{"id":{"type":"string"}}}`
	const json2 = `{"type":"object","properties":{"id":{"type":"string"},"n":{"type":"integer"}}}`
	const jsonBad = `{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`
	if _, err := cl.CreateSchema(c, "orders-json", sr.Schema{Schema: json1, Type: sr.TypeJSON}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CreateSchema(c, "orders-json", sr.Schema{Schema: json2, Type: sr.TypeJSON}); err != nil {
		t.Fatalf("adding an optional property: %v", err)
	}
	if _, err := cl.CreateSchema(c, "orders-json", sr.Schema{Schema: jsonBad, Type: sr.TypeJSON}); srCode(err) != 409 {
		t.Fatalf("string -> integer: %v, want 409", err)
	}
	if _, err := cl.CreateSchema(c, "bad-json", sr.Schema{Schema: `{"type":12}`, Type: sr.TypeJSON}); srCode(err) != 42201 {
		t.Fatalf("invalid JSON schema: %v, want 42201", err)
	}
	types, err := cl.SupportedTypes(c)
	if err != nil || len(types) != 3 {
		t.Fatalf("types: %v %v", types, err)
	}
}

// IMPORT mode: caller-chosen ids and versions, refused elsewhere; config
// with defaultToGlobal; the compatibility endpoint's verbose messages.
func TestImportModeAndConfig(t *testing.T) {
	_, cl := startRegistry(t, t.TempDir())
	c := ctx(t)
	addr := registryAddr(t, cl)
	if _, err := cl.CreateSchemaWithIDAndVersion(c, "imp", sr.Schema{Schema: `"int"`}, 100, 5); srCode(err) != 42205 {
		t.Fatalf("id outside IMPORT: %v, want 42205", err)
	}
	if r := cl.SetMode(c, sr.ModeImport); r[0].Err != nil {
		t.Fatalf("global IMPORT: %v", r[0].Err)
	}
	s, err := cl.CreateSchemaWithIDAndVersion(c, "imp", sr.Schema{Schema: `"int"`}, 100, 5)
	if err != nil || s.ID != 100 || s.Version != 5 {
		t.Fatalf("import: %+v %v", s, err)
	}
	if _, err := cl.CreateSchemaWithIDAndVersion(c, "imp2", sr.Schema{Schema: `"long"`}, 100, 1); srCode(err) != 42207 {
		t.Fatalf("id taken by another schema: %v, want 42207", err)
	}
	if r := cl.SetMode(c, sr.ModeReadWrite); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	next, err := cl.CreateSchema(c, "after", sr.Schema{Schema: `"string"`})
	if err != nil || next.ID != 101 {
		t.Fatalf("id after import: %+v %v, want 101", next, err)
	}

	if st, m, raw := httpDo(t, addr, "GET", "/config/imp", nil); st != 404 || m["error_code"] != float64(40408) {
		t.Fatalf("subject config unset: %d %s, want 40408", st, raw)
	}
	if st, m, raw := httpDo(t, addr, "GET", "/config/imp?defaultToGlobal=true", nil); st != 200 || m["compatibilityLevel"] != "BACKWARD" {
		t.Fatalf("defaultToGlobal: %d %s", st, raw)
	}
	if st, _, raw := httpDo(t, addr, "PUT", "/config", map[string]string{"compatibility": "FORWARD"}); st != 200 {
		t.Fatalf("global config: %d %s", st, raw)
	}
	if st, m, raw := httpDo(t, addr, "GET", "/config/imp?defaultToGlobal=true", nil); st != 200 || m["compatibilityLevel"] != "FORWARD" {
		t.Fatalf("defaultToGlobal after a global change: %d %s", st, raw)
	}
	st, m, raw := httpDo(t, addr, "POST", "/compatibility/subjects/imp/versions/latest?verbose=true", map[string]string{"schema": `"string"`})
	if st != 200 || m["is_compatible"] != false {
		t.Fatalf("int -> string: %d %s", st, raw)
	}
	if msgs, _ := m["messages"].([]any); len(msgs) == 0 {
		t.Fatalf("verbose without messages: %s", raw)
	}
	if st, _, raw := httpDo(t, addr, "GET", "/schemas/ids/999", nil); st != 404 || !strings.Contains(string(raw), "40403") {
		t.Fatalf("unknown id: %d %s", st, raw)
	}
	if st, _, raw := httpDo(t, addr, "GET", "/subjects/nosuch/versions", nil); st != 404 || !strings.Contains(string(raw), "40401") {
		t.Fatalf("unknown subject: %d %s", st, raw)
	}
	if st, _, raw := httpDo(t, addr, "GET", "/subjects/imp/versions/latest/schema", nil); st != 200 || strings.TrimSpace(string(raw)) != `"int"` {
		t.Fatalf("raw schema: %d %s", st, raw)
	}
}

// normalize: two JSON Schema texts differing in key order are one schema
// with normalize=true and two without; Avro texts differing only in key
// order are one schema either way (as Confluent, which compares Avro's
// own rendering). Content types: application/json is served, text/plain
// is 415.
func TestNormalizeAndContentTypes(t *testing.T) {
	_, cl := startRegistry(t, t.TempDir())
	addr := registryAddr(t, cl)
	reg := func(path, schema, typ string) map[string]any {
		t.Helper()
		st, m, raw := httpDo(t, addr, "POST", path, map[string]any{"schema": schema, "schemaType": typ})
		if st != 200 {
			t.Fatalf("POST %s: %d %s", path, st, raw)
		}
		return m
	}
	a := reg("/subjects/j/versions?normalize=true", `{"type":"object","properties":{"x":{"type":"string"}}}`, "JSON")
	b := reg("/subjects/j/versions?normalize=true", `{"properties":{"x":{"type":"string"}},"type":"object"}`, "JSON")
	if a["id"] != b["id"] {
		t.Fatalf("normalized JSON schemas got ids %v and %v", a["id"], b["id"])
	}
	c := reg("/subjects/j2/versions", `{"type":"object","properties":{"x":{"type":"string"}}}`, "JSON")
	d := reg("/subjects/j2/versions", `{"properties":{"x":{"type":"string"}},"type":"object"}`, "JSON")
	if c["id"] == d["id"] {
		t.Fatalf("without normalize, reordered JSON schemas share id %v", c["id"])
	}
	// normalize set in the subject's config applies without the parameter.
	if st, _, raw := httpDo(t, addr, "PUT", "/config/j3", map[string]any{"compatibility": "BACKWARD", "normalize": true}); st != 200 {
		t.Fatalf("config normalize: %d %s", st, raw)
	}
	g := reg("/subjects/j3/versions", `{"type":"object","properties":{"x":{"type":"string"}}}`, "JSON")
	h := reg("/subjects/j3/versions", `{"properties":{"x":{"type":"string"}},"type":"object"}`, "JSON")
	if g["id"] != h["id"] {
		t.Fatalf("config normalize=true: ids %v and %v", g["id"], h["id"])
	}
	e := reg("/subjects/av/versions", `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`, "AVRO")
	f := reg("/subjects/av/versions", `{"fields":[{"type":"int","name":"a"}],"name":"R","type":"record"}`, "AVRO")
	if e["id"] != f["id"] {
		t.Fatalf("reordered Avro got ids %v and %v", e["id"], f["id"])
	}
	st, _, raw := httpDo(t, addr, "GET", fmt.Sprintf("/schemas/ids/%v/subjects", e["id"]), nil)
	if st != 200 || strings.TrimSpace(string(raw)) != `["av"]` {
		t.Fatalf("subjects by id: %d %s", st, raw)
	}

	for _, tc := range []struct {
		ct     string
		status int
	}{{"application/json", 200}, {"application/vnd.schemaregistry.v1+json; charset=utf-8", 200}, {"text/plain", 415}} {
		req, _ := http.NewRequest("POST", "http://"+addr+"/subjects/ct/versions", strings.NewReader(`{"schema":"\"int\""}`))
		req.Header.Set("Content-Type", tc.ct)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status || (tc.status == 200 && resp.Header.Get("Content-Type") != "application/vnd.schemaregistry.v1+json") {
			t.Fatalf("Content-Type %s: %d %s, want %d", tc.ct, resp.StatusCode, resp.Header.Get("Content-Type"), tc.status)
		}
	}
}

// References in JSON Schema ($ref by the reference's name, relative or
// absolute) and Protobuf (import by the reference's name).
func TestJSONAndProtobufReferences(t *testing.T) {
	_, cl := startRegistry(t, t.TempDir())
	c := ctx(t)
	if _, err := cl.CreateSchema(c, "address", sr.Schema{Type: sr.TypeJSON,
		Schema: `{"type":"object","properties":{"street":{"type":"string"}},"required":["street"]}`}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"address.json", "https://example.com/schemas/address.json"} {
		if _, err := cl.CreateSchema(c, "customer-"+strings.ReplaceAll(name, "/", "_"), sr.Schema{Type: sr.TypeJSON,
			Schema:     `{"type":"object","properties":{"home":{"$ref":"` + name + `"}}}`,
			References: []sr.SchemaReference{{Name: name, Subject: "address", Version: 1}}}); err != nil {
			t.Fatalf("JSON Schema referencing %s: %v", name, err)
		}
	}
	if _, err := cl.CreateSchema(c, "customer-unresolved", sr.Schema{Type: sr.TypeJSON,
		Schema: `{"type":"object","properties":{"home":{"$ref":"address.json"}}}`}); srCode(err) != 42201 {
		t.Fatalf("JSON Schema with an unresolved $ref: %v, want 42201", err)
	}
	if _, err := cl.CreateSchema(c, "money", sr.Schema{Type: sr.TypeProtobuf,
		Schema: `syntax = "proto3"; package shop; message Money { int64 cents = 1; }`}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CreateSchema(c, "order", sr.Schema{Type: sr.TypeProtobuf,
		Schema:     `syntax = "proto3"; package shop; import "shop/money.proto"; import "google/protobuf/timestamp.proto"; message Order { Money total = 1; google.protobuf.Timestamp at = 2; }`,
		References: []sr.SchemaReference{{Name: "shop/money.proto", Subject: "money", Version: 1}}}); err != nil {
		t.Fatalf("Protobuf importing a reference: %v", err)
	}
	if _, err := cl.CreateSchema(c, "order-unresolved", sr.Schema{Type: sr.TypeProtobuf,
		Schema: `syntax = "proto3"; package shop; import "shop/money.proto"; message Order { Money total = 1; }`}); srCode(err) != 42201 {
		t.Fatalf("Protobuf with an unresolved import: %v, want 42201", err)
	}
}
