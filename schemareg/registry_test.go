package schemareg_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/testpki"
)

// withRegistry turns the schema registry on, on a free loopback port.
func withRegistry(c *config.Config) { c.SchemaRegistryListeners = []string{"http://127.0.0.1:0"} }

// startRegistry starts an in-process broker with its registry in dir and
// returns the broker and a franz-go sr client of the registry.
func startRegistry(t testing.TB, dir string) (*broker.Broker, *sr.Client) {
	t.Helper()
	b := brokertest.StartIn(t, dir, "segment", withRegistry)
	reg := b.SchemaRegistry()
	if reg == nil {
		t.Fatal("no schema registry")
	}
	cl, err := sr.NewClient(sr.URLs("http://" + reg.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	return b, cl
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

const (
	avroV1 = `{"type":"record","name":"myrecord","fields":[{"type":"string","name":"f1"}]}`
	avroV2 = `{"type":"record","name":"myrecord","fields":[{"type":"string","name":"f1"},{"type":"string","name":"f2","default":"foo"}]}`
	// avroV3 adds a field without a default: not BACKWARD after avroV2.
	avroV3 = `{"type":"record","name":"myrecord","fields":[{"type":"string","name":"f1"},{"type":"string","name":"f2","default":"foo"},{"type":"int","name":"f3"}]}`
)

func srCode(err error) int {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return 0
}

// Register, get, list, lookup, delete and re-register through franz-go's
// sr client; a broker restart keeps every schema, id and config.
func TestRegistryRoundTrip(t *testing.T) {
	dir := t.TempDir()
	b, cl := startRegistry(t, dir)
	c := ctx(t)

	s1, err := cl.CreateSchema(c, "orders-value", sr.Schema{Schema: avroV1})
	if err != nil {
		t.Fatalf("register v1: %v", err)
	}
	again, err := cl.CreateSchema(c, "orders-value", sr.Schema{Schema: avroV1})
	if err != nil || again.ID != s1.ID || again.Version != 1 {
		t.Fatalf("register v1 again: %+v %v, want id %d version 1", again, err, s1.ID)
	}
	s2, err := cl.CreateSchema(c, "orders-value", sr.Schema{Schema: avroV2})
	if err != nil || s2.Version != 2 || s2.ID == s1.ID {
		t.Fatalf("register v2: %+v %v", s2, err)
	}
	// The same schema under another subject keeps its id.
	other, err := cl.CreateSchema(c, "payments-value", sr.Schema{Schema: avroV1})
	if err != nil || other.ID != s1.ID {
		t.Fatalf("register under another subject: %+v %v, want id %d", other, err, s1.ID)
	}
	if _, err := cl.CreateSchema(c, "orders-value", sr.Schema{Schema: avroV3}); srCode(err) != 409 {
		t.Fatalf("incompatible v3 (BACKWARD): %v, want error code 409", err)
	}
	if _, err := cl.CreateSchema(c, "bad", sr.Schema{Schema: `{"type":"record","name":"x","fields":[{"name":"a","type":"nosuch"}]}`}); srCode(err) != 42201 {
		t.Fatalf("invalid schema: %v, want 42201", err)
	}

	subjects, err := cl.Subjects(c)
	if err != nil || !slices.Equal(subjects, []string{"orders-value", "payments-value"}) {
		t.Fatalf("subjects: %v %v", subjects, err)
	}
	versions, err := cl.SubjectVersions(c, "orders-value")
	if err != nil || !slices.Equal(versions, []int{1, 2}) {
		t.Fatalf("versions: %v %v", versions, err)
	}
	got, err := cl.SchemaByID(c, s2.ID)
	if err != nil || got.Schema != avroV2 {
		t.Fatalf("schema by id: %+v %v", got, err)
	}
	latest, err := cl.SchemaByVersion(c, "orders-value", -1)
	if err != nil || latest.Version != 2 || latest.ID != s2.ID {
		t.Fatalf("latest: %+v %v", latest, err)
	}
	found, err := cl.LookupSchema(c, "orders-value", sr.Schema{Schema: avroV1})
	if err != nil || found.Version != 1 || found.ID != s1.ID {
		t.Fatalf("lookup: %+v %v", found, err)
	}
	usedBy, err := cl.SchemaVersionsByID(c, s1.ID)
	if err != nil || len(usedBy) != 2 {
		t.Fatalf("versions by id: %+v %v", usedBy, err)
	}

	// Soft delete, then permanent delete of payments-value.
	if _, err := cl.DeleteSubject(c, "payments-value", sr.HardDelete); srCode(err) != 40405 {
		t.Fatalf("hard delete before soft: %v, want 40405", err)
	}
	if vs, err := cl.DeleteSubject(c, "payments-value", sr.SoftDelete); err != nil || !slices.Equal(vs, []int{1}) {
		t.Fatalf("soft delete: %v %v", vs, err)
	}
	if _, err := cl.SubjectVersions(c, "payments-value"); srCode(err) != 40401 {
		t.Fatalf("versions of a soft-deleted subject: %v, want 40401", err)
	}
	if vs, err := cl.DeleteSubject(c, "payments-value", sr.HardDelete); err != nil || !slices.Equal(vs, []int{1}) {
		t.Fatalf("hard delete: %v %v", vs, err)
	}
	if err := cl.DeleteSchema(c, "orders-value", 1, sr.SoftDelete); err != nil {
		t.Fatalf("delete version 1: %v", err)
	}
	if _, err := cl.SchemaByVersion(c, "orders-value", 1); srCode(err) != 40402 {
		t.Fatalf("deleted version: %v, want 40402", err)
	}

	// Config and mode.
	if r := cl.SetCompatibility(c, sr.SetCompatibility{Level: sr.CompatNone}, "orders-value"); r[0].Err != nil {
		t.Fatalf("set compatibility: %v", r[0].Err)
	}
	s3, err := cl.CreateSchema(c, "orders-value", sr.Schema{Schema: avroV3})
	if err != nil || s3.Version != 3 {
		t.Fatalf("v3 under NONE: %+v %v", s3, err)
	}
	if r := cl.SetMode(c, sr.ModeReadOnly, "orders-value"); r[0].Err != nil {
		t.Fatalf("set mode: %v", r[0].Err)
	}
	if _, err := cl.CreateSchema(c, "orders-value", sr.Schema{Schema: `{"type":"string"}`}); srCode(err) != 42205 {
		t.Fatalf("register in READONLY: %v, want 42205", err)
	}

	// Restart: everything is read back from _schemas.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	_, cl = startRegistry(t, dir)
	versions, err = cl.SubjectVersions(c, "orders-value")
	if err != nil || !slices.Equal(versions, []int{2, 3}) {
		t.Fatalf("versions after restart: %v %v", versions, err)
	}
	if got, err := cl.SchemaByID(c, s3.ID); err != nil || got.Schema != avroV3 {
		t.Fatalf("schema by id after restart: %+v %v", got, err)
	}
	if r := cl.Compatibility(c, "orders-value"); r[0].Err != nil || r[0].Level != sr.CompatNone {
		t.Fatalf("compatibility after restart: %+v", r[0])
	}
	if r := cl.Mode(c, "orders-value"); r[0].Err != nil || r[0].Mode != sr.ModeReadOnly {
		t.Fatalf("mode after restart: %+v", r[0])
	}
	if _, err := cl.SubjectVersions(c, "payments-value"); srCode(err) != 40401 {
		t.Fatalf("permanently deleted subject after restart: %v, want 40401", err)
	}
	// A new schema after restart gets a new id, never one handed out.
	if r := cl.SetMode(c, sr.ModeReadWrite, "orders-value"); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	s4, err := cl.CreateSchema(c, "fresh", sr.Schema{Schema: `{"type":"string"}`})
	if err != nil || s4.ID <= s3.ID {
		t.Fatalf("new id after restart: %+v %v, want > %d", s4, err, s3.ID)
	}
}

// registryAddr is the host:port cl talks to.
func registryAddr(t *testing.T, cl *sr.Client) string {
	t.Helper()
	u, ok := cl.OptValue(sr.URLs).([]string)
	if !ok || len(u) == 0 {
		t.Fatal("sr client has no URL")
	}
	return strings.TrimPrefix(u[0], "http://")
}

// GET /schemas and /contexts, as franz-go's AllSchemas and Contexts call
// them.
func TestAllSchemasAndContexts(t *testing.T) {
	_, cl := startRegistry(t, t.TempDir())
	c := ctx(t)
	for _, s := range []struct{ subject, schema string }{{"a", avroV1}, {"a", avroV2}, {"b", `"int"`}} {
		if _, err := cl.CreateSchema(c, s.subject, sr.Schema{Schema: s.schema}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := cl.AllSchemas(c)
	if err != nil || len(all) != 3 {
		t.Fatalf("all schemas: %+v %v", all, err)
	}
	latest, err := cl.AllSchemas(sr.WithParams(c, sr.LatestOnly))
	if err != nil || len(latest) != 2 || latest[0].Version != 2 {
		t.Fatalf("latest only: %+v %v", latest, err)
	}
	if cs, err := cl.Contexts(c); err != nil || !slices.Equal(cs, []string{"."}) {
		t.Fatalf("contexts: %v %v", cs, err)
	}
}

// schema.registry.listeners=https:// serves TLS with the broker's ssl.*
// settings; a plain-HTTP client is refused.
func TestRegistryHTTPS(t *testing.T) {
	pki := testpki.New(t)
	b := brokertest.Start(t, "memory", func(c *config.Config) {
		c.SchemaRegistryListeners = []string{"https://127.0.0.1:0"}
		c.SecurityProperties = map[string]string{
			"ssl.keystore.location":   pki.Broker.Keystore,
			"ssl.truststore.location": pki.Broker.CA,
		}
	})
	addr := b.SchemaRegistry().Addr()
	cl, err := sr.NewClient(sr.URLs("https://"+addr), sr.DialTLSConfig(pki.TLS))
	if err != nil {
		t.Fatal(err)
	}
	c := ctx(t)
	s, err := cl.CreateSchema(c, "tls", sr.Schema{Schema: `"int"`})
	if err != nil {
		t.Fatalf("register over https: %v", err)
	}
	if got, err := cl.SchemaByID(c, s.ID); err != nil || got.Schema != `"int"` {
		t.Fatalf("read over https: %+v %v", got, err)
	}
	plain, err := sr.NewClient(sr.URLs("http://" + addr))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Subjects(c); err == nil {
		t.Fatal("plain HTTP to the https listener answered")
	}
}

// A taken registry port (several brokers on one host with the default)
// leaves the broker serving Kafka without a registry instead of failing.
func TestRegistryPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	b := brokertest.Start(t, "memory", func(c *config.Config) {
		c.SchemaRegistryListeners = []string{"http://" + ln.Addr().String()}
	})
	if b.SchemaRegistry() != nil {
		t.Fatal("a registry on a taken port")
	}
	kc, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	if err := kc.Ping(ctx(t)); err != nil {
		t.Fatalf("the broker does not serve Kafka: %v", err)
	}
}
