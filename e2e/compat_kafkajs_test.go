package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
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
	t.Parallel()
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

// kafkajsTxnSummary is the JSON line txn.js prints when it finished.
type kafkajsTxnSummary struct {
	OK                   bool             `json:"ok"`
	KafkaJS              string           `json:"kafkajs"`
	CommittedRecords     int              `json:"committedRecords"`
	AbortedRecords       int              `json:"abortedRecords"`
	TxnOffsets           map[string]int64 `json:"txnOffsets"`
	AbortedOffsets       map[string]int64 `json:"abortedOffsets"`
	CommittedAfterCommit map[string]int64 `json:"committedAfterCommit"`
	CommittedAfterAbort  map[string]int64 `json:"committedAfterAbort"`
}

// TestKafkaJSTransactions runs kafkajs transactions through
// e2e/compat/kafkajs/txn.js: a consumer of a group reads an input topic;
// a transactional producer (producer.transaction(), send, sendOffsets with
// the group's offsets) copies half of it to an output topic and commits,
// then copies all of it with the offsets of its end and aborts. franz-go
// then checks the output: read_committed sees the committed copies only,
// read_uncommitted sees both; and the group's offsets are those of the
// committed transaction.
func TestKafkaJSTransactions(t *testing.T) {
	node, _ := needKafkaJS(t)
	script := filepath.Join(kafkajsDir, "txn.js")
	b := startBroker(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	const n = 60
	const in, out, group = "kjs-txn-in", "kjs-txn-out", "kjs-txn-group"
	stdout, stderr, err := run(t, 120*time.Second, "", node, script, "--brokers", b.addr,
		"--in", in, "--out", out, "--group", group, "--txn-id", "kjs-txn", "--n", strconv.Itoa(n), "--timeout", "110")
	if err != nil {
		t.Fatalf("txn.js: %v\nstdout:\n%s\nstderr:\n%s\nbroker log:\n%s", err, stdout, stderr, b.logText())
	}
	var sum kafkajsTxnSummary
	ls := lines(stdout)
	if len(ls) == 0 || json.Unmarshal([]byte(ls[len(ls)-1]), &sum) != nil {
		t.Fatalf("txn.js printed no JSON summary\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	t.Logf("kafkajs summary: %s", ls[len(ls)-1])
	if strings.TrimSpace(stderr) != "" {
		t.Logf("txn.js stderr:\n%s", stderr)
	}
	if !sum.OK || sum.KafkaJS != "2.2.4" || sum.CommittedRecords != n/2 || sum.AbortedRecords != n || len(sum.TxnOffsets) != 3 {
		t.Fatalf("unexpected summary %+v", sum)
	}
	// What kafkajs itself read back through OffsetFetch.
	for p, want := range sum.TxnOffsets {
		if sum.CommittedAfterCommit[p] != want || sum.CommittedAfterAbort[p] != want {
			t.Errorf("partition %s: kafkajs fetched offset %d after the commit and %d after the abort, want %d",
				p, sum.CommittedAfterCommit[p], sum.CommittedAfterAbort[p], want)
		}
	}

	checkTxnOutput(t, b.addr, out, n/2, n)
	got := groupOffsets(t, b.addr, group, in)
	for p, want := range sum.TxnOffsets {
		pn, _ := strconv.Atoi(p)
		if got[int32(pn)] != want {
			t.Errorf("group %s partition %s: committed offset %d, want %d (the committed transaction's; aborted: %d)",
				group, p, got[int32(pn)], want, sum.AbortedOffsets[p])
		}
	}
}

// checkTxnOutput reads out with franz-go both ways: read_committed must
// give exactly the committed copies (values "committed-<i>", i < committed,
// each once), read_uncommitted those and the aborted ones ("aborted-<i>",
// i < aborted).
func checkTxnOutput(t *testing.T, addr, out string, committed, aborted int) {
	t.Helper()
	recs := readTopic(t, addr, out, kgo.ReadCommitted())
	seen := map[string]bool{}
	for _, r := range recs {
		v := string(r.Value)
		if !strings.HasPrefix(v, "committed-") || seen[v] {
			t.Errorf("read_committed: record %q at partition %d offset %d (aborted or duplicate)", v, r.Partition, r.Offset)
		}
		seen[v] = true
	}
	for i := 0; i < committed; i++ {
		if v := fmt.Sprintf("committed-%d", i); !seen[v] {
			t.Errorf("read_committed: %s missing", v)
		}
	}
	if len(recs) != committed {
		t.Errorf("read_committed: %d records, want %d", len(recs), committed)
	}
	recs = readTopic(t, addr, out, kgo.ReadUncommitted())
	var nAborted int
	for _, r := range recs {
		if strings.HasPrefix(string(r.Value), "aborted-") {
			nAborted++
		}
	}
	if len(recs) != committed+aborted || nAborted != aborted {
		t.Errorf("read_uncommitted: %d records of which %d aborted, want %d and %d", len(recs), nAborted, committed+aborted, aborted)
	}
}
