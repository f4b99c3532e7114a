package e2e

import (
	"context"
	"errors"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// cliResult is one run of the sluice binary as an admin tool.
type cliResult struct {
	args           []string
	stdout, stderr string
	code           int
}

// sluiceCLI runs `sluice ARGS` and returns what it printed and its exit
// status.
func sluiceCLI(t *testing.T, args ...string) cliResult {
	t.Helper()
	stdout, stderr, err := run(t, 60*time.Second, "", sluiceBinary(t), args...)
	r := cliResult{args: args, stdout: stdout, stderr: stderr}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("sluice %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// mustExit0 fails the test unless r exited 0, and returns r.
func mustExit0(t *testing.T, r cliResult) cliResult {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("sluice %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// cli runs `sluice ARGS --bootstrap-server addr`.
func cli(t *testing.T, addr string, args ...string) cliResult {
	t.Helper()
	return sluiceCLI(t, append(args, "--bootstrap-server", addr)...)
}

// cliOK runs cli and fails the test unless it exits 0.
func cliOK(t *testing.T, addr string, args ...string) cliResult {
	t.Helper()
	return mustExit0(t, cli(t, addr, args...))
}

// cliWith runs `sluice ARGS --command-config file` (no
// --bootstrap-server: the file names the broker).
func cliWith(t *testing.T, file string, args ...string) cliResult {
	t.Helper()
	return sluiceCLI(t, append(args, "--command-config", file)...)
}

// cliWithOK runs cliWith and fails the test unless it exits 0.
func cliWithOK(t *testing.T, file string, args ...string) cliResult {
	t.Helper()
	return mustExit0(t, cliWith(t, file, args...))
}

// cliFails runs the CLI and fails the test unless it exits with code and
// says want on stderr.
func cliFails(t *testing.T, addr string, code int, want string, args ...string) cliResult {
	t.Helper()
	r := cli(t, addr, args...)
	if r.code != code || !strings.Contains(r.stderr, want) {
		t.Fatalf("sluice %s: exit %d, want %d with %q on stderr\nstdout:\n%s\nstderr:\n%s",
			strings.Join(r.args, " "), r.code, code, want, r.stdout, r.stderr)
	}
	return r
}

var cellSep = regexp.MustCompile(`\s{2,}`)

// table finds the aligned table in out whose header starts with the given
// columns and returns its rows as column name -> cell. Cells are separated by
// two or more spaces; the table ends at a blank line.
func table(t *testing.T, out string, header ...string) []map[string]string {
	t.Helper()
	ls := strings.Split(out, "\n")
	for i, l := range ls {
		cols := cellSep.Split(strings.TrimSpace(l), -1)
		if len(cols) < len(header) || !equalStrings(cols[:len(header)], header) {
			continue
		}
		var rows []map[string]string
		for _, l := range ls[i+1:] {
			if strings.TrimSpace(l) == "" {
				break
			}
			cells := cellSep.Split(strings.TrimSpace(l), -1)
			row := map[string]string{}
			for j, c := range cols {
				if j < len(cells) {
					row[c] = cells[j]
				}
			}
			rows = append(rows, row)
		}
		return rows
	}
	t.Fatalf("no table with header %q in:\n%s", header, out)
	return nil
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// rowWhere returns the one row whose cells match all of kv (column, value
// pairs), failing the test otherwise.
func rowWhere(t *testing.T, rows []map[string]string, kv ...string) map[string]string {
	t.Helper()
	var found []map[string]string
	for _, r := range rows {
		match := true
		for i := 0; i+1 < len(kv); i += 2 {
			match = match && r[kv[i]] == kv[i+1]
		}
		if match {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one row with %q, found %d in %v", kv, len(found), rows)
	}
	return found[0]
}

// TestCLITopic drives `sluice topic` through create, list, describe,
// alter-config and delete against the real binary, and checks its errors
// and exit codes.
func TestCLITopic(t *testing.T) {
	b := startBroker(t, t.TempDir(), "num.partitions=2")
	a := b.addr

	r := cliOK(t, a, "topic", "create", "cli-a", "--partitions", "3", "--config", "retention.ms=60000")
	if !strings.Contains(r.stdout, "Created topic cli-a.") {
		t.Fatalf("create said %q", r.stdout)
	}
	cliOK(t, a, "topic", "create", "--replication-factor", "1", "cli-b") // flags before the name; broker's num.partitions
	cliFails(t, a, 1, "TOPIC_ALREADY_EXISTS", "topic", "create", "cli-a")
	cliOK(t, a, "topic", "create", "cli-a", "--if-not-exists")

	rows := table(t, cliOK(t, a, "topic", "list").stdout, "TOPIC", "PARTITIONS", "REPLICATION-FACTOR")
	if len(rows) != 2 {
		t.Fatalf("list: want 2 topics, got %v", rows)
	}
	rowWhere(t, rows, "TOPIC", "cli-a", "PARTITIONS", "3", "REPLICATION-FACTOR", "1")
	rowWhere(t, rows, "TOPIC", "cli-b", "PARTITIONS", "2", "REPLICATION-FACTOR", "1")

	out := cliOK(t, a, "topic", "describe", "cli-a").stdout
	head := regexp.MustCompile(`(?m)^Topic: cli-a  TopicId: ([A-Za-z0-9_-]{22})  PartitionCount: 3  ReplicationFactor: 1  Configs: (.*)$`).FindStringSubmatch(out)
	if head == nil {
		t.Fatalf("describe header not found in:\n%s", out)
	}
	if head[1] == "AAAAAAAAAAAAAAAAAAAAAA" {
		t.Fatalf("topic id is zero:\n%s", out)
	}
	if head[2] != "retention.ms=60000" {
		t.Fatalf("describe: overridden configs %q, want retention.ms=60000", head[2])
	}
	parts := table(t, out, "PARTITION", "LEADER", "REPLICAS", "ISR")
	if len(parts) != 3 {
		t.Fatalf("describe: want 3 partitions, got %v", parts)
	}
	for i, p := range parts {
		if p["PARTITION"] != strconv.Itoa(i) || p["LEADER"] == "none" || p["REPLICAS"] != p["LEADER"] || p["ISR"] != p["LEADER"] {
			t.Fatalf("describe: partition row %d: %v", i, p)
		}
	}
	// With no names, describe shows every topic; the id stays the same.
	all := cliOK(t, a, "topic", "describe").stdout
	if !strings.Contains(all, "Topic: cli-a  TopicId: "+head[1]) || !strings.Contains(all, "Topic: cli-b  ") {
		t.Fatalf("describe all:\n%s", all)
	}

	r = cliOK(t, a, "topic", "alter-config", "cli-a", "--set", "segment.bytes=1048576", "--delete", "retention.ms")
	if !strings.Contains(r.stdout, "Completed updating config for topic cli-a.") {
		t.Fatalf("alter-config said %q", r.stdout)
	}
	out = cliOK(t, a, "topic", "describe", "cli-a").stdout
	if !strings.Contains(out, "Configs: segment.bytes=1048576\n") {
		t.Fatalf("after alter-config:\n%s", out)
	}
	cliFails(t, a, 1, "INVALID_CONFIG", "topic", "alter-config", "cli-a", "--set", "no.such.config=1")
	cliFails(t, a, 2, "nothing to do", "topic", "alter-config", "cli-a")

	r = cliOK(t, a, "topic", "delete", "cli-a", "cli-b")
	if !strings.Contains(r.stdout, "Deleted topic cli-a.") || !strings.Contains(r.stdout, "Deleted topic cli-b.") {
		t.Fatalf("delete said %q", r.stdout)
	}
	if rows := table(t, cliOK(t, a, "topic", "list").stdout, "TOPIC"); len(rows) != 0 {
		t.Fatalf("list after delete: %v", rows)
	}
	cliFails(t, a, 1, "UNKNOWN_TOPIC_OR_PARTITION", "topic", "describe", "cli-a")
	cliFails(t, a, 1, "UNKNOWN_TOPIC_OR_PARTITION", "topic", "delete", "cli-a")
	cliOK(t, a, "topic", "delete", "cli-a", "--if-exists")

	// A manual replica assignment (kafka-topics.sh's format): this single
	// broker (id 0) may be named, another may not.
	cliOK(t, a, "topic", "create", "cli-m", "--replica-assignment", "0,0,0")
	if rows := table(t, cliOK(t, a, "topic", "list").stdout, "TOPIC", "PARTITIONS", "REPLICATION-FACTOR"); len(rows) != 1 || rows[0]["PARTITIONS"] != "3" || rows[0]["REPLICATION-FACTOR"] != "1" {
		t.Fatalf("list after --replica-assignment 0,0,0: %v", rows)
	}
	cliFails(t, a, 1, "INVALID_REPLICA_ASSIGNMENT", "topic", "create", "cli-n", "--replica-assignment", "0,5")
	cliFails(t, a, 2, "replaces --partitions", "topic", "create", "cli-n", "--replica-assignment", "0", "--partitions", "1")
	cliFails(t, a, 2, "is not a broker id", "topic", "create", "cli-n", "--replica-assignment", "0,x")
	cliOK(t, a, "topic", "delete", "cli-m")

	// Usage mistakes exit 2 before talking to the broker.
	cliFails(t, a, 2, "exactly one topic name", "topic", "create")
	cliFails(t, a, 2, "--partitions must be positive", "topic", "create", "x", "--partitions", "0")
	cliFails(t, a, 2, "want key=value", "topic", "create", "x", "--config", "retention.ms")
	cliFails(t, a, 2, `unknown subcommand "frob"`, "topic", "frob")

	// Nothing listening: a clear error, exit 1.
	dead := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cliFails(t, dead, 1, "sluice topic list: list topics:", "topic", "list", "--timeout", "5s")
}

// TestCLIGroup builds a consumer group with franz-go (consume, commit,
// close), then checks `sluice group` describe figures against what was
// produced and committed, every reset-offsets scenario, the refusals while
// a member is active, and delete.
func TestCLIGroup(t *testing.T) {
	b := startBroker(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	a := b.addr
	const topic, group = "orders", "cli-group"
	cliOK(t, a, "topic", "create", topic, "--partitions", "2")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(a), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	// Record i of partition p carries the timestamp base + i minutes, so
	// the by-time resets have known answers: partition 0 gets 5 records now
	// and 4 more after the group commits; partition 1 gets 3.
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	produce := func(p int32, from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			rec := &kgo.Record{Topic: topic, Partition: p, Value: []byte("v" + strconv.Itoa(i)),
				Timestamp: base.Add(time.Duration(i) * time.Minute)}
			if err := prod.ProduceSync(ctx, rec).FirstErr(); err != nil {
				t.Fatalf("produce to partition %d: %v", p, err)
			}
		}
	}
	produce(0, 0, 5)
	produce(1, 0, 3)

	cons, err := kgo.NewClient(kgo.SeedBrokers(a), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ClientID("cli-test-consumer"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	consOpen := true
	defer func() {
		if consOpen {
			cons.Close()
		}
	}()
	for got := 0; got < 8; {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of 8 records: %v", got, err)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", tp, p, err) })
		got += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}

	// While the consumer is a member: described as Stable with its
	// assignment, and neither reset nor delete is allowed.
	out := cliOK(t, a, "group", "describe", group).stdout
	rowWhere(t, table(t, out, "GROUP", "COORDINATOR (ID)", "STATE"), "GROUP", group, "STATE", "Stable", "PROTOCOL-TYPE", "consumer", "#MEMBERS", "1")
	m := rowWhere(t, table(t, out, "CONSUMER-ID", "HOST", "CLIENT-ID"), "CLIENT-ID", "cli-test-consumer")
	if m["#PARTITIONS"] != "2" || m["ASSIGNMENT"] != topic+":0,1" {
		t.Fatalf("member row %v, want both partitions of %s", m, topic)
	}
	offs := table(t, out, "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET")
	for _, p := range []string{"0", "1"} {
		if r := rowWhere(t, offs, "PARTITION", p); r["CONSUMER-ID"] != m["CONSUMER-ID"] || r["CLIENT-ID"] != "cli-test-consumer" || r["LAG"] != "0" {
			t.Fatalf("partition %s row %v, want owned by %s with lag 0", p, r, m["CONSUMER-ID"])
		}
	}
	cliFails(t, a, 1, "inactive", "group", "reset-offsets", group, "--topic", topic, "--to-earliest", "--execute")
	cliFails(t, a, 1, "Stable", "group", "reset-offsets", group, "--topic", topic, "--to-earliest")
	cliFails(t, a, 1, "active members", "group", "delete", group)
	rowWhere(t, table(t, cliOK(t, a, "group", "list").stdout, "GROUP", "STATE", "PROTOCOL-TYPE"),
		"GROUP", group, "STATE", "Stable", "PROTOCOL-TYPE", "consumer")

	cons.Close() // leaves the group: it becomes Empty
	consOpen = false
	produce(0, 5, 9)

	// offsets describes the group and returns partition -> [current, end, lag].
	offsets := func() map[string][3]string {
		t.Helper()
		out := cliOK(t, a, "group", "describe", group).stdout
		rowWhere(t, table(t, out, "GROUP", "COORDINATOR (ID)"), "GROUP", group, "STATE", "Empty", "#MEMBERS", "0")
		if !strings.Contains(out, "Consumer group '"+group+"' has no active members.") {
			t.Fatalf("describe of an empty group:\n%s", out)
		}
		got := map[string][3]string{}
		for _, r := range table(t, out, "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET") {
			if r["TOPIC"] != topic || r["CONSUMER-ID"] != "-" {
				t.Fatalf("offsets row %v", r)
			}
			got[r["PARTITION"]] = [3]string{r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"]}
		}
		return got
	}
	want := func(step string, p0, p1 int) {
		t.Helper()
		got := offsets()
		exp := map[string][3]string{
			"0": {strconv.Itoa(p0), "9", strconv.Itoa(9 - p0)},
			"1": {strconv.Itoa(p1), "3", strconv.Itoa(3 - p1)},
		}
		if len(got) != 2 || got["0"] != exp["0"] || got["1"] != exp["1"] {
			t.Fatalf("%s: partition -> [current end lag] = %v, want %v", step, got, exp)
		}
	}
	want("after commit and more produce", 5, 3)

	reset := func(args ...string) cliResult {
		t.Helper()
		return cliOK(t, a, append([]string{"group", "reset-offsets", group}, args...)...)
	}
	plan := func(r cliResult) map[string]string {
		t.Helper()
		got := map[string]string{}
		for _, row := range table(t, r.stdout, "GROUP", "TOPIC", "PARTITION", "NEW-OFFSET") {
			got[row["PARTITION"]] = row["NEW-OFFSET"]
		}
		return got
	}

	r := reset("--topic", topic, "--to-earliest")
	if p := plan(r); p["0"] != "0" || p["1"] != "0" || !strings.Contains(r.stderr, "--execute") {
		t.Fatalf("dry run: plan %v, stderr %q", p, r.stderr)
	}
	want("dry run changes nothing", 5, 3)

	reset("--topic", topic, "--to-earliest", "--execute")
	want("to-earliest", 0, 0)
	reset("--topic", topic, "--to-latest", "--execute")
	want("to-latest", 9, 3)
	reset("--topic", topic+":0", "--to-offset", "2", "--execute")
	want("to-offset 2 on partition 0", 2, 3)
	reset("--topic", topic+":1", "--to-offset", "1", "--execute")
	want("to-offset 1 on partition 1", 2, 1)
	if r := reset("--topic", topic+":1", "--to-offset", "100", "--execute"); !strings.Contains(r.stderr, "past the log end offset") {
		t.Fatalf("to-offset past the end: stderr %q", r.stderr)
	}
	want("to-offset clamped to the end", 2, 3)
	// Partition 0's first record at or after base+2m30s is offset 3;
	// partition 1 has none, so it goes to its end.
	reset("--topic", topic, "--to-datetime", base.Add(150*time.Second).UTC().Format(time.RFC3339), "--execute")
	want("to-datetime", 3, 3)
	reset("--topic", topic, "--to-earliest", "--execute")
	// now-55m30s is base+4m30s plus however long the test took to get
	// here (well under 30s): partition 0's first record after it is 5.
	reset("--topic", topic, "--by-duration", "PT55M30S", "--execute")
	want("by-duration", 5, 3)
	reset("--all-topics", "--shift-by", "-2", "--execute")
	want("shift-by -2", 3, 1)

	cliFails(t, a, 2, "exactly one of", "group", "reset-offsets", group, "--topic", topic, "--to-earliest", "--to-latest")
	cliFails(t, a, 2, "--topic", "group", "reset-offsets", group, "--to-earliest")
	cliFails(t, a, 2, "--to-datetime", "group", "reset-offsets", group, "--topic", topic, "--to-datetime", "yesterday")
	cliFails(t, a, 1, "does not exist", "group", "reset-offsets", group, "--topic", "nope", "--to-earliest")
	cliFails(t, a, 1, "no partition 7", "group", "reset-offsets", group, "--topic", topic+":7", "--to-earliest")
	want("after refused resets", 3, 1)

	rowWhere(t, table(t, cliOK(t, a, "group", "list").stdout, "GROUP", "STATE", "PROTOCOL-TYPE"),
		"GROUP", group, "STATE", "Empty", "PROTOCOL-TYPE", "consumer")
	if r := cliOK(t, a, "group", "delete", group); !strings.Contains(r.stdout, "Deleted group "+group+".") {
		t.Fatalf("delete said %q", r.stdout)
	}
	for _, row := range table(t, cliOK(t, a, "group", "list").stdout, "GROUP", "STATE") {
		if row["GROUP"] == group {
			t.Fatalf("group still listed after delete: %v", row)
		}
	}
	cliFails(t, a, 1, "does not exist", "group", "describe", group)
	cliFails(t, a, 1, "does not exist", "group", "delete", group)
}
