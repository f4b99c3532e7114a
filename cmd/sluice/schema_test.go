package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/testpki"
)

const (
	schemaV1 = `{"type":"record","name":"Order","fields":[{"name":"id","type":"string"}]}`
	schemaV2 = `{"type":"record","name":"Order","fields":[{"name":"id","type":"string"},{"name":"qty","type":"int","default":1}]}`
	// schemaV3 adds a field without a default: not BACKWARD after V2.
	schemaV3 = `{"type":"record","name":"Order","fields":[{"name":"id","type":"string"},{"name":"qty","type":"int","default":1},{"name":"sku","type":"string"}]}`
)

// TestSchemaCommand: register, list, get, compat, config and delete
// against a broker's registry; usage mistakes exit 2 before the registry
// is asked; the registry's refusals exit 1 with Confluent's code and
// message.
func TestSchemaCommand(t *testing.T) {
	b := brokertest.Start(t, "memory", func(c *config.Config) { c.SchemaRegistryListeners = []string{"http://127.0.0.1:0"} })
	reg := "http://" + b.SchemaRegistry().Addr()
	sluice := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(append(args, "--registry", reg), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	must := func(args ...string) string {
		t.Helper()
		code, out, errOut := sluice(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		return out
	}

	if out := must("schema", "register", "orders-value", "--schema-file", file("v1.avsc", schemaV1)); !strings.Contains(out, "version 1, id 1") {
		t.Errorf("register v1: %q", out)
	}
	if out := must("schema", "register", "orders-value", "--schema", schemaV2); !strings.Contains(out, "version 2, id 2") {
		t.Errorf("register v2: %q", out)
	}
	if out := must("schema", "register", "orders-value", "--schema", schemaV2); !strings.Contains(out, "version 2, id 2") {
		t.Errorf("register v2 again (same id): %q", out)
	}
	must("schema", "register", "prices-value", "--type", "JSON", "--schema", `{"type":"object","properties":{"p":{"type":"number"}}}`)
	must("schema", "register", "com.example.Line", "--schema", `{"type":"record","name":"Line","fields":[{"name":"o","type":"Order"}]}`,
		"--reference", "Order=orders-value:1")

	out := must("schema", "list")
	for _, want := range []string{"SUBJECT LATEST ID TYPE", "orders-value 2 2 AVRO", "prices-value 1 3 JSON", "com.example.Line 1 4 AVRO"} {
		if !strings.Contains(squeeze(out), want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
	if out := must("schema", "list", "--prefix", "pri"); strings.Contains(out, "orders") || !strings.Contains(out, "prices-value") {
		t.Errorf("list --prefix pri:\n%s", out)
	}

	out = must("schema", "get", "orders-value")
	for _, want := range []string{"Subject: orders-value", "Version: 2", "ID: 2", "Type: AVRO", `"qty"`} {
		if !strings.Contains(out, want) {
			t.Errorf("get lacks %q:\n%s", want, out)
		}
	}
	if out := must("schema", "get", "orders-value", "--version", "1", "--schema-only"); strings.TrimSpace(out) != schemaV1 {
		t.Errorf("get --version 1 --schema-only: %q, want %q", out, schemaV1)
	}
	if out := must("schema", "get", "com.example.Line"); !strings.Contains(out, "Reference: Order=orders-value:1") {
		t.Errorf("get with a reference:\n%s", out)
	}
	if out := must("schema", "get", "--id", "1"); !strings.Contains(out, "Used by: orders-value version 1") {
		t.Errorf("get --id 1:\n%s", out)
	}

	if out := must("schema", "compat", "orders-value", "--schema", schemaV2); !strings.Contains(out, "Compatible.") {
		t.Errorf("compat v2: %q", out)
	}
	code, out, errOut := sluice("schema", "compat", "orders-value", "--schema", schemaV3)
	if code != 1 || !strings.Contains(out, "Incompatible:") || !strings.Contains(out, "sku") {
		t.Errorf("compat v3: exit %d\n%s%s", code, out, errOut)
	}

	if out := must("schema", "config"); !strings.Contains(out, "Global compatibility: BACKWARD") {
		t.Errorf("config: %q", out)
	}
	if out := must("schema", "config", "orders-value"); !strings.Contains(out, "(the global level) compatibility: BACKWARD") {
		t.Errorf("config orders-value (unset): %q", out)
	}
	must("schema", "config", "orders-value", "--set", "none")
	if out := must("schema", "config", "orders-value"); !strings.Contains(out, "Subject orders-value compatibility: NONE") {
		t.Errorf("config orders-value after --set none: %q", out)
	}
	if out := must("schema", "compat", "orders-value", "--schema", schemaV3); !strings.Contains(out, "Compatible.") {
		t.Errorf("compat v3 at NONE: %q", out)
	}
	if out := must("schema", "config", "orders-value", "--delete"); !strings.Contains(out, "was NONE") {
		t.Errorf("config --delete: %q", out)
	}

	// The registry's refusals: exit 1, Confluent's code and message.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"schema", "get", "nosuch"}, "error 40401"},
		{[]string{"schema", "get", "orders-value", "--version", "9"}, "error 40402"},
		{[]string{"schema", "register", "bad", "--schema", `{"type":`}, "error 42201"},
		{[]string{"schema", "delete", "prices-value", "--permanent"}, "error 40405"},
	} {
		if code, _, errOut := sluice(tc.args...); code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d %q, want 1 with %q", tc.args, code, errOut, tc.want)
		}
	}
	// Usage mistakes: exit 2.
	for _, args := range [][]string{
		{"schema", "get"},
		{"schema", "register", "x"},
		{"schema", "register", "x", "--schema", "1", "--schema-file", "f"},
		{"schema", "register", "x", "--schema", `"int"`, "--type", "XML"},
		{"schema", "register", "x", "--schema", `"int"`, "--reference", "nocolon"},
		{"schema", "get", "x", "--version", "0"},
		{"schema", "config", "--set", "SIDEWAYS"},
		{"schema", "nosuch"},
	} {
		if code, _, errOut := sluice(args...); code != 2 {
			t.Errorf("%v: exit %d %q, want 2", args, code, errOut)
		}
	}
	var errOut2 bytes.Buffer
	if code := run([]string{"schema", "list", "--registry", "ftp://x"}, io.Discard, &errOut2); code != 2 {
		t.Errorf("--registry ftp://x: exit %d %q, want 2", code, errOut2.String())
	}

	if out := must("schema", "delete", "prices-value"); !strings.Contains(out, "Soft-deleted subject prices-value: versions 1.") {
		t.Errorf("delete: %q", out)
	}
	if out := must("schema", "delete", "prices-value", "--permanent"); !strings.Contains(out, "Permanently deleted") {
		t.Errorf("delete --permanent: %q", out)
	}
	if out := must("schema", "delete", "orders-value", "--version", "latest"); !strings.Contains(out, "version 2") {
		t.Errorf("delete --version latest: %q", out)
	}
	if out := must("schema", "list"); strings.Contains(out, "prices-value") || !strings.Contains(squeeze(out), "orders-value 1 1 AVRO") {
		t.Errorf("list after deletes:\n%s", out)
	}
}

// squeeze collapses each run of spaces to one (table columns).
func squeeze(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

// Against a registry that needs a login: --user and --password (PLAIN or
// SCRAM users), 401 and 403 explained.
func TestSchemaCommandAuth(t *testing.T) {
	b := brokertest.Start(t, "memory", func(c *config.Config) {
		c.SchemaRegistryListeners = []string{"http://127.0.0.1:0"}
		c.Listeners = []string{"SASL_PLAINTEXT://127.0.0.1:0"}
		c.SASLEnabledMechanisms = []string{"PLAIN", "SCRAM-SHA-512"}
		c.AuthorizerClassName = "kafka.security.authorizer.AclAuthorizer"
		c.SuperUsers = []string{"User:admin"}
		c.SecurityProperties = map[string]string{
			"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
				`username="admin" password="admin-secret" user_admin="admin-secret";`,
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	up, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "carol-secret"}})
	if err != nil || up.Error() != nil {
		t.Fatalf("create carol: %v %v", err, up.Error())
	}
	reg := "http://" + b.SchemaRegistry().Addr()
	sluice := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(append(args, "--registry", reg), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	if code, _, errOut := sluice("schema", "list"); code != 1 || !strings.Contains(errOut, "error 401") || !strings.Contains(errOut, "--user") {
		t.Errorf("without a user: exit %d %q", code, errOut)
	}
	if code, out, errOut := sluice("schema", "register", "orders-value", "--schema", schemaV1, "--user", "admin", "--password", "admin-secret"); code != 0 {
		t.Fatalf("register as admin: exit %d %s%s", code, out, errOut)
	}
	t.Setenv("SLUICE_SCHEMA_REGISTRY_PASSWORD", "carol-secret")
	if code, out, errOut := sluice("schema", "list", "--user", "carol"); code != 0 || strings.Contains(out, "orders-value") {
		t.Errorf("carol (no ACL) lists: exit %d %s%s, want no subjects", code, out, errOut)
	}
	if code, _, errOut := sluice("schema", "get", "orders-value", "--user", "carol"); code != 1 || !strings.Contains(errOut, "error 40301") {
		t.Errorf("carol gets orders-value: exit %d %q, want 40301", code, errOut)
	}
}

// An https registry: --ca-file trusts its CA; without it the system's
// roots do not, and the command says why.
func TestSchemaCommandHTTPS(t *testing.T) {
	pki := testpki.New(t)
	b := brokertest.Start(t, "memory", func(c *config.Config) {
		c.SchemaRegistryListeners = []string{"https://127.0.0.1:0"}
		c.SecurityProperties = map[string]string{
			"ssl.keystore.location":   pki.Broker.Keystore,
			"ssl.truststore.location": pki.Broker.CA,
		}
	})
	reg := "https://" + b.SchemaRegistry().Addr()
	var out, errOut bytes.Buffer
	if code := run([]string{"schema", "register", "tls-value", "--schema", `"int"`, "--registry", reg, "--ca-file", pki.Broker.CA}, &out, &errOut); code != 0 {
		t.Fatalf("register over https with --ca-file: exit %d %s%s", code, out.String(), errOut.String())
	}
	errOut.Reset()
	if code := run([]string{"schema", "list", "--registry", reg}, io.Discard, &errOut); code != 1 || !strings.Contains(errOut.String(), "certificate") {
		t.Errorf("https without --ca-file: exit %d %q, want 1 naming the certificate", code, errOut.String())
	}
}
