package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// kafkajsSRSummary is the JSON line schema_registry.js prints when every
// check passed.
type kafkajsSRSummary struct {
	OK                 bool           `json:"ok"`
	IDs                map[string]int `json:"ids"`
	Produced           map[string]int `json:"produced"`
	Consumed           map[string]int `json:"consumed"`
	IncompatibleStatus int            `json:"incompatibleStatus"`
	AvroVersions       int            `json:"avroVersions"`
	UnframedRefused    string         `json:"unframedRefused"`
}

// TestSchemaRegistryKafkaJS runs @kafkajs/confluent-schema-registry 4.1
// and kafkajs 2.2 against the sluice binary's schema registry and brokers
// through e2e/compat/kafkajs/schema_registry.js: Avro (two versions, an
// incompatible third refused with 409), JSON Schema and Protobuf schemas
// registered and found again, records encoded, produced to topics that
// validate them, consumed with a consumer group and decoded by a registry
// client that reads the schemas by id; an unframed value is INVALID_RECORD.
func TestSchemaRegistryKafkaJS(t *testing.T) {
	node, _ := needKafkaJS(t)
	if _, err := os.Stat(filepath.Join(kafkajsDir, "node_modules", "@kafkajs", "confluent-schema-registry", "package.json")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("@kafkajs/confluent-schema-registry is not installed in e2e/%s (make test installs it): %v", kafkajsDir, err)
		}
		t.Skipf("@kafkajs/confluent-schema-registry is not installed in e2e/%s; run make test-deps", kafkajsDir)
	}
	b, url := srBroker(t)
	const n = 200
	stdout, stderr, err := run(t, 120*time.Second, "", node, filepath.Join(kafkajsDir, "schema_registry.js"),
		"--brokers", b.addr, "--registry", url, "--prefix", "kjs-sr", "--n", strconv.Itoa(n), "--timeout", "110")
	if err != nil {
		t.Fatalf("schema_registry.js: %v\nstdout:\n%s\nstderr:\n%s\nbroker log:\n%s", err, stdout, stderr, b.logText())
	}
	var sum kafkajsSRSummary
	ls := lines(stdout)
	if len(ls) == 0 || json.Unmarshal([]byte(ls[len(ls)-1]), &sum) != nil {
		t.Fatalf("schema_registry.js printed no JSON summary\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	t.Logf("summary: %s", ls[len(ls)-1])
	if strings.TrimSpace(stderr) != "" {
		t.Logf("schema_registry.js stderr:\n%s", stderr)
	}
	if !sum.OK || sum.IncompatibleStatus != 409 || sum.AvroVersions != 2 || sum.UnframedRefused != "INVALID_RECORD" || len(sum.IDs) != 4 {
		t.Fatalf("unexpected summary %+v", sum)
	}
	for _, f := range []string{"avro", "json", "proto"} {
		if sum.Produced[f] != n || sum.Consumed[f] != n {
			t.Errorf("%s: produced %d, consumed %d, want %d each", f, sum.Produced[f], sum.Consumed[f], n)
		}
	}
	// The ids the JavaScript client got are the registry's.
	for f, id := range sum.IDs {
		if _, found, err := srSchemaByID(url, id); err != nil || !found {
			t.Errorf("%s: id %d not in the registry: %v", f, id, err)
		}
	}
}
