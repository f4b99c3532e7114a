package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// needSRPython returns systemPython if it has confluent-kafka-python and
// the modules its schema registry serializers import (requests,
// jsonschema, protobuf), failing under CI=true (make test installs them)
// and skipping elsewhere.
func needSRPython(t *testing.T) string {
	t.Helper()
	py := needConfluentPython(t)
	out, err := exec.Command(py, "-c", "import requests, jsonschema, google.protobuf; print(google.protobuf.__version__)").CombinedOutput()
	if err != nil {
		msg := py + " cannot import requests, jsonschema and google.protobuf (python3-requests, python3-jsonschema, python3-protobuf): " + strings.TrimSpace(string(out))
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s (make test installs them)", msg)
		}
		t.Skipf("%s; run make test-deps", msg)
	}
	t.Logf("python3-protobuf %s", strings.TrimSpace(string(out)))
	return py
}

// srPythonSummary is the JSON line schema_registry.py prints last.
type srPythonSummary struct {
	OK            bool           `json:"ok"`
	APISchemaID   int            `json:"apiSchemaId"`
	JSONSchemaID  int            `json:"jsonSchemaId"`
	ProtoSchemaID int            `json:"protoSchemaId"`
	Produced      map[string]int `json:"produced"`
	Consumed      map[string]int `json:"consumed"`
	Unframed      string         `json:"unframed"`
}

// TestSchemaRegistryPython runs confluent-kafka-python's
// SchemaRegistryClient, JSONSerializer and ProtobufSerializer (Debian's
// python3-confluent-kafka 1.7.0) against the sluice binary through
// e2e/compat/python/schema_registry.py: register, register again, lookup
// (with "references": []), get by id, latest, compatibility config and
// test, 409 and 40403; then records serialized in both formats (Protobuf
// schemas are sent as base64 FileDescriptorProtos by this client) are
// produced to topics that validate them and deserialized back.
func TestSchemaRegistryPython(t *testing.T) {
	t.Parallel()
	py := needSRPython(t)
	b, url := srBroker(t)
	const n = 200
	stdout, stderr, err := run(t, 120*time.Second, "", py, filepath.Join("compat", "python", "schema_registry.py"),
		"--brokers", b.addr, "--registry", url, "--prefix", "py-sr", "--n", strconv.Itoa(n), "--timeout", "110")
	if err != nil {
		t.Fatalf("schema_registry.py: %v\nstdout:\n%s\nstderr:\n%s\nbroker log:\n%s", err, stdout, stderr, b.logText())
	}
	var sum srPythonSummary
	ls := lines(stdout)
	if len(ls) == 0 || json.Unmarshal([]byte(ls[len(ls)-1]), &sum) != nil {
		t.Fatalf("schema_registry.py printed no JSON summary\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	t.Logf("summary: %s", ls[len(ls)-1])
	if !sum.OK || sum.Unframed != "INVALID_RECORD" || sum.ProtoSchemaID == sum.JSONSchemaID || sum.ProtoSchemaID <= 0 {
		t.Fatalf("unexpected summary %+v", sum)
	}
	// The same JSON Schema under two subjects has one id, as Confluent's.
	if sum.JSONSchemaID != sum.APISchemaID {
		t.Errorf("one JSON Schema under two subjects got ids %d and %d", sum.APISchemaID, sum.JSONSchemaID)
	}
	for _, f := range []string{"json", "proto"} {
		if sum.Produced[f] != n || sum.Consumed[f] != n {
			t.Errorf("%s: produced %d, consumed %d, want %d each", f, sum.Produced[f], sum.Consumed[f], n)
		}
	}
	// The Protobuf schema the serializer registered (a base64
	// FileDescriptorProto) reads back as .proto source, as from
	// Confluent's registry, for clients that parse it.
	var v struct {
		SchemaType string `json:"schemaType"`
		Schema     string `json:"schema"`
	}
	if st, raw, err := srCall(url, "GET", "/schemas/ids/"+strconv.Itoa(sum.ProtoSchemaID), nil, &v); err != nil || st != 200 || v.SchemaType != "PROTOBUF" ||
		!strings.Contains(v.Schema, "message User {") || !strings.Contains(v.Schema, "int32 age = 2;") {
		t.Fatalf("schema %d: %d %s %v, want .proto source of message User", sum.ProtoSchemaID, st, raw, err)
	}
}
