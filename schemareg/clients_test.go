package schemareg_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
)

// What Confluent's own clients send, which other clients do not:
// confluent-kafka-python (e2e/schema_registry_python_test.go) looks a
// schema up with "references": [] and registers Protobuf schemas as the
// base64 of a FileDescriptorProto.

// An empty references list is no references: looking a schema up, or
// registering it again, with "references": [] finds the version
// registered without the list, and the other way round.
func TestEmptyReferencesList(t *testing.T) {
	_, cl := startRegistry(t, t.TempDir())
	addr := registryAddr(t, cl)
	for i, tc := range []struct{ typ, schema string }{
		{"AVRO", `{"type":"record","name":"r","fields":[{"name":"a","type":"string"}]}`},
		{"JSON", `{"type":"object","properties":{"a":{"type":"string"}}}`},
		{"PROTOBUF", "syntax = \"proto3\";\nmessage M { string a = 1; }\n"},
	} {
		subject := fmt.Sprintf("empty-refs-%d", i)
		st, m, raw := httpDo(t, addr, "POST", "/subjects/"+subject+"/versions", map[string]any{"schema": tc.schema, "schemaType": tc.typ, "references": []any{}})
		if st != 200 {
			t.Fatalf("%s: register: %d %s", tc.typ, st, raw)
		}
		id := m["id"]
		for _, body := range []map[string]any{
			{"schema": tc.schema, "schemaType": tc.typ, "references": []any{}},
			{"schema": tc.schema, "schemaType": tc.typ},
		} {
			st, m, raw := httpDo(t, addr, "POST", "/subjects/"+subject, body)
			if st != 200 || m["id"] != id || m["version"] != float64(1) {
				t.Fatalf("%s: lookup %v: %d %s, want id %v version 1", tc.typ, body["references"], st, raw, id)
			}
			st, m, raw = httpDo(t, addr, "POST", "/subjects/"+subject+"/versions", body)
			if st != 200 || m["id"] != id {
				t.Fatalf("%s: register again %v: %d %s, want id %v", tc.typ, body["references"], st, raw, id)
			}
		}
	}
}

// srUserDescriptor is the FileDescriptorProto protoc 3.21 embeds in
// e2e/compat/python/sr_user_pb2.py (no json_name on its fields).
const srUserDescriptor = "\n\rsr_user.proto\x12\nsluice.e2e\"!\n\x04User\x12\x0c\n\x04name\x18\x01 \x01(\t\x12\x0b\n\x03age\x18\x02 \x01(\x05b\x06proto3"

const srUserProto = "syntax = \"proto3\";\npackage sluice.e2e;\n\nmessage User {\n  string name = 1;\n  int32 age = 2;\n}\n"

// A Protobuf schema registered as the base64 of its FileDescriptorProto
// (as confluent-kafka-python's ProtobufSerializer does) is a valid schema,
// kept as .proto source, found again in the same form, and the same schema
// as its .proto source: one id for both.
func TestProtobufBase64Descriptor(t *testing.T) {
	_, cl := startRegistry(t, t.TempDir())
	addr := registryAddr(t, cl)
	b64 := base64.StdEncoding.EncodeToString([]byte(srUserDescriptor))
	body := map[string]any{"schema": b64, "schemaType": "PROTOBUF", "references": []any{}}
	st, m, raw := httpDo(t, addr, "POST", "/subjects/pb-desc-value/versions", body)
	if st != 200 {
		t.Fatalf("register the descriptor: %d %s", st, raw)
	}
	id := m["id"]
	if st, m, raw := httpDo(t, addr, "POST", "/subjects/pb-desc-value", body); st != 200 || m["id"] != id {
		t.Fatalf("lookup the descriptor: %d %s, want id %v", st, raw, id)
	}
	// Kept as .proto source, as Confluent keeps it.
	if st, m, raw := httpDo(t, addr, "GET", fmt.Sprintf("/schemas/ids/%v", id), nil); st != 200 || m["schema"] != strings.ReplaceAll(srUserProto, "\n\n", "\n") || m["schemaType"] != "PROTOBUF" {
		t.Fatalf("schema %v: %d %s, want the descriptor as .proto source", id, st, raw)
	}
	st, m, raw = httpDo(t, addr, "POST", "/subjects/pb-text-value/versions", map[string]any{"schema": srUserProto, "schemaType": "PROTOBUF"})
	if st != 200 || m["id"] != id {
		t.Fatalf("the same schema as .proto source: %d %s, want id %v", st, raw, id)
	}
	// A changed field type, as a descriptor, is still checked: BACKWARD
	// refuses age as a string (FIELD_SCALAR_KIND_CHANGED).
	changed := []byte(srUserDescriptor)
	changed[len(changed)-9] = 9 // TYPE_INT32 (5) -> TYPE_STRING (9)
	st, _, raw = httpDo(t, addr, "POST", "/subjects/pb-desc-value/versions", map[string]any{"schema": base64.StdEncoding.EncodeToString(changed), "schemaType": "PROTOBUF"})
	if st != 409 {
		t.Fatalf("an incompatible descriptor: %d %s, want 409", st, raw)
	}
	// Not base64 of a descriptor, not .proto either: 42201.
	st, m, raw = httpDo(t, addr, "POST", "/subjects/pb-bad-value/versions", map[string]any{"schema": "bm90IGEgZGVzY3JpcHRvcg==", "schemaType": "PROTOBUF"})
	if st != 422 || m["error_code"] != float64(42201) {
		t.Fatalf("garbage: %d %s, want 42201", st, raw)
	}
}

// A descriptor whose messages nest deeper than .proto source may (64
// levels) is refused with 42201, as that source is.
func TestProtobufBase64DescriptorTooDeep(t *testing.T) {
	_, cl := startRegistry(t, t.TempDir())
	addr := registryAddr(t, cl)
	m := &descriptorpb.DescriptorProto{Name: proto.String("M0")}
	for i := 1; i <= 100; i++ {
		m = &descriptorpb.DescriptorProto{Name: proto.String(fmt.Sprintf("M%d", i)), NestedType: []*descriptorpb.DescriptorProto{m}}
	}
	b, err := proto.Marshal(&descriptorpb.FileDescriptorProto{Name: proto.String("deep.proto"), Syntax: proto.String("proto3"), MessageType: []*descriptorpb.DescriptorProto{m}})
	if err != nil {
		t.Fatal(err)
	}
	st, body, raw := httpDo(t, addr, "POST", "/subjects/deep-value/versions", map[string]any{"schema": base64.StdEncoding.EncodeToString(b), "schemaType": "PROTOBUF"})
	if st != 422 || body["error_code"] != float64(42201) || !strings.Contains(string(raw), "nested deeper") {
		t.Fatalf("a descriptor nested 101 deep: %d %s, want 42201", st, raw)
	}
}

// Descriptors of schemas with what the renderer writes (nested messages and
// enums, maps, oneofs, proto3 optional, repeated, reserved, an import of a
// well-known type, a custom json_name), compiled and stripped of source
// info and default json_names as protoc embeds them, are kept as .proto
// source that is the same schema as the one they came from; one with
// options it does not render is kept as sent.
func TestProtobufBase64DescriptorRendered(t *testing.T) {
	_, cl := startRegistry(t, t.TempDir())
	addr := registryAddr(t, cl)
	for i, tc := range []struct {
		src      string
		rendered bool
	}{
		{`syntax = "proto3";
package shop.v1;
import "google/protobuf/timestamp.proto";
message Order {
  enum Status { UNKNOWN = 0; PAID = 1; reserved 5 to 7; reserved "OLD"; }
  message Line { string sku = 1; int64 qty = 2; }
  string id = 1;
  repeated Line lines = 2;
  map<string, int64> totals = 3;
  oneof payment { string card = 4; Line voucher = 5; }
  optional Status status = 6;
  google.protobuf.Timestamp at = 7;
  string created_by = 8 [json_name = "author"];
  reserved 10 to 12;
  reserved "legacy";
}
enum Region { EU = 0; US = 1; }
`, true},
		{`syntax = "proto2";
message P { required string a = 1; optional int32 b = 2; repeated bool c = 3; }
`, true},
		{`syntax = "proto3";
option go_package = "example.com/x";
message Q { string a = 1; }
`, false},
	} {
		files, err := (&protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: protocompile.SourceAccessorFromMap(map[string]string{"x.proto": tc.src})})}).Compile(context.Background(), "x.proto")
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		fd := protodesc.ToFileDescriptorProto(files[0])
		fd.SourceCodeInfo = nil
		for _, m := range fd.MessageType {
			stripJSONNames(m)
		}
		b, err := proto.Marshal(fd)
		if err != nil {
			t.Fatal(err)
		}
		b64 := base64.StdEncoding.EncodeToString(b)
		st, m, raw := httpDo(t, addr, "POST", fmt.Sprintf("/subjects/rendered-%d/versions", i), map[string]any{"schema": b64, "schemaType": "PROTOBUF"})
		if st != 200 {
			t.Fatalf("case %d: register: %d %s", i, st, raw)
		}
		id := m["id"]
		st, m, raw = httpDo(t, addr, "GET", fmt.Sprintf("/schemas/ids/%v", id), nil)
		if st != 200 {
			t.Fatalf("case %d: %d %s", i, st, raw)
		}
		if got := m["schema"].(string); (got != b64) != tc.rendered || (tc.rendered && !strings.Contains(got, "message ")) {
			t.Fatalf("case %d: kept as %q, want rendered %v", i, got, tc.rendered)
		}
		st, m, raw = httpDo(t, addr, "POST", fmt.Sprintf("/subjects/source-%d/versions", i), map[string]any{"schema": tc.src, "schemaType": "PROTOBUF"})
		if st != 200 || m["id"] != id {
			t.Fatalf("case %d: the source: %d %s, want id %v", i, st, raw, id)
		}
		if st, m, raw := httpDo(t, addr, "POST", fmt.Sprintf("/subjects/rendered-%d", i), map[string]any{"schema": b64, "schemaType": "PROTOBUF"}); st != 200 || m["id"] != id {
			t.Fatalf("case %d: lookup of the descriptor: %d %s", i, st, raw)
		}
	}
}

// stripJSONNames drops the json_names that are protoc's default, as protoc
// does in the descriptors it embeds.
func stripJSONNames(m *descriptorpb.DescriptorProto) {
	for _, f := range m.Field {
		if f.GetJsonName() == protoDefaultJSONName(f.GetName()) {
			f.JsonName = nil
		}
	}
	for _, n := range m.NestedType {
		stripJSONNames(n)
	}
}

func protoDefaultJSONName(name string) string {
	var b strings.Builder
	up := false
	for _, r := range name {
		switch {
		case r == '_':
			up = true
		case up:
			b.WriteString(strings.ToUpper(string(r)))
			up = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
