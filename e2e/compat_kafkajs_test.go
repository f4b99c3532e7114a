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

// kafkajsDir holds compat.js and its pinned kafkajs (package-lock.json);
// make test-deps runs npm ci there.
const kafkajsDir = "compat/kafkajs"

// needKafkaJS returns node and the path of compat.js, failing under CI=true
// (make test installs them) and skipping elsewhere, as need does.
func needKafkaJS(t *testing.T) (node, script string) {
	t.Helper()
	node = need(t, "node")
	if _, err := os.Stat(filepath.Join(kafkajsDir, "node_modules", "kafkajs", "package.json")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("kafkajs is not installed in e2e/%s (make test installs it): %v", kafkajsDir, err)
		}
		t.Skipf("kafkajs is not installed in e2e/%s; run make test-deps", kafkajsDir)
	}
	return node, filepath.Join(kafkajsDir, "compat.js")
}

// kafkajsSummary is the JSON line compat.js prints when every check passed.
type kafkajsSummary struct {
	OK         bool             `json:"ok"`
	KafkaJS    string           `json:"kafkajs"`
	Produced   int              `json:"produced"`
	Gzip       int              `json:"gzip"`
	Consumed1  int              `json:"consumed1"`
	Consumed2  int              `json:"consumed2"`
	EndOffsets map[string]int64 `json:"endOffsets"`
	Committed  map[string]int64 `json:"committed"`
	GroupState string           `json:"groupState"`
}

// TestKafkaJS runs kafkajs 2.2 (Node.js; it uses no flexible protocol
// versions) against the broker through e2e/compat/kafkajs/compat.js:
// admin (CreateTopics, Metadata, ListOffsets, OffsetFetch, DescribeGroups,
// ListGroups), an idempotent acks=-1 producer (InitProducerId, Produce, a
// GZIP batch), and a consumer group that reads every message back, checks
// keys, values, headers, per-partition order and duplicates, commits, and a
// second consumer of the group that resumes from the committed offsets.
func TestKafkaJS(t *testing.T) {
	node, script := needKafkaJS(t)
	b := startBroker(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	const n, m = 3000, 400
	stdout, stderr, err := run(t, 120*time.Second, "", node, script,
		"--brokers", b.addr, "--topic", "kafkajs-compat", "--group", "kafkajs-group",
		"--n", strconv.Itoa(n), "--m", strconv.Itoa(m), "--timeout", "110")
	if err != nil {
		t.Fatalf("compat.js: %v\nstdout:\n%s\nstderr:\n%s\nbroker log:\n%s", err, stdout, stderr, b.logText())
	}
	var sum kafkajsSummary
	ls := lines(stdout)
	if len(ls) == 0 || json.Unmarshal([]byte(ls[len(ls)-1]), &sum) != nil {
		t.Fatalf("compat.js printed no JSON summary\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	t.Logf("kafkajs summary: %s", ls[len(ls)-1])
	if strings.TrimSpace(stderr) != "" {
		t.Logf("compat.js stderr:\n%s", stderr)
	}
	if !sum.OK || sum.KafkaJS != "2.2.4" || sum.Produced != n+m || sum.Consumed1 != n || sum.Consumed2 != m ||
		sum.Gzip == 0 || sum.GroupState != "Stable" {
		t.Fatalf("unexpected summary %+v", sum)
	}
	var total int64
	for p, off := range sum.EndOffsets {
		if sum.Committed[p] != off {
			t.Errorf("partition %s: committed %d, end offset %d", p, sum.Committed[p], off)
		}
		total += off
	}
	if len(sum.EndOffsets) != 3 || total != n+m {
		t.Errorf("end offsets %v: %d partitions summing to %d, want 3 summing to %d", sum.EndOffsets, len(sum.EndOffsets), total, n+m)
	}
}
