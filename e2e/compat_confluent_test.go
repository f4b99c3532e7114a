package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/internal/testenv"
)

// needConfluentPython returns systemPython if it can import
// confluent_kafka (Debian's python3-confluent-kafka, over librdkafka),
// failing under CI=true (make test installs it) and skipping elsewhere.
func needConfluentPython(t *testing.T) string {
	t.Helper()
	testenv.NeedsProcess(t, systemPython+" with confluent-kafka")
	out, err := exec.Command(systemPython, "-c", "import confluent_kafka as c; print(c.version()[0], c.libversion()[0])").CombinedOutput()
	if err != nil {
		msg := systemPython + " cannot import confluent_kafka (python3-confluent-kafka): " + strings.TrimSpace(string(out))
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s (make test installs it)", msg)
		}
		t.Skipf("%s; run make test-deps", msg)
	}
	t.Logf("confluent-kafka-python and librdkafka: %s", strings.TrimSpace(string(out)))
	return systemPython
}

// TestConfluentKafkaTransactions runs librdkafka's transactional producer
// (confluent-kafka-python) in a consume-transform-produce loop with
// send_offsets_to_transaction (testdata/confluent_txn.py): committed
// transactions and one aborted one. A read_committed franz-go consumer then
// finds every input record copied exactly once (the aborted copies
// invisible), and the group's committed offsets at the end of the input.
func TestConfluentKafkaTransactions(t *testing.T) {
	t.Parallel()
	py := needConfluentPython(t)
	script, err := filepath.Abs(filepath.Join("testdata", "confluent_txn.py"))
	if err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, t.TempDir(), "group.initial.rebalance.delay.ms=100")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for _, topic := range []string{"cin", "cout"} {
		if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	const n = 600
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Topic: "cin", Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("r%d", i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	out, err := exec.CommandContext(ctx, py, script, b.addr, "cin", "cout", "ctx-group", "ctx-txn", fmt.Sprint(n)).Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var sum struct {
		OK                 bool
		Error              string
		Committed, Aborted int
	}
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); jerr != nil || !sum.OK {
		t.Fatalf("confluent_txn.py: %v %v: %s\n%s", err, jerr, sum.Error, out)
	}
	if sum.Aborted == 0 {
		t.Fatalf("no transaction was aborted: %+v", sum)
	}
	t.Logf("librdkafka: %d records copied in committed transactions, %d in an aborted one", sum.Committed, sum.Aborted)

	read := func(level kgo.IsolationLevel) map[string]int {
		c, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ConsumeTopics("cout"),
			kgo.FetchIsolationLevel(level), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		got := map[string]int{}
		idle := time.Now()
		for time.Since(idle) < 3*time.Second {
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			fs := c.PollFetches(pctx)
			pcancel()
			fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)]++; idle = time.Now() })
			if ctx.Err() != nil {
				t.Fatal(ctx.Err())
			}
		}
		return got
	}
	committed := read(kgo.ReadCommitted())
	if len(committed) != n {
		t.Fatalf("read_committed: %d distinct copies, want %d", len(committed), n)
	}
	for v, c := range committed {
		if c != 1 {
			t.Fatalf("read_committed: %q copied %d times", v, c)
		}
	}
	total := 0
	for _, c := range read(kgo.ReadUncommitted()) {
		total += c
	}
	if total != n+sum.Aborted {
		t.Fatalf("read_uncommitted: %d copies, want %d (the aborted ones too)", total, n+sum.Aborted)
	}
	offs, err := adm.FetchOffsets(ctx, "ctx-group")
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, "cin")
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(lo kadm.ListedOffset) {
		if o, ok := offs.Lookup("cin", lo.Partition); !ok || o.At != lo.Offset {
			t.Errorf("group offset of cin-%d: %+v, want %d", lo.Partition, o, lo.Offset)
		}
	})
}
