package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/bench/load"
	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/internal/zktest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// runPerf runs `sluice perf args...` in-process and decodes its --json
// summary.
func runPerf(t *testing.T, wantStatus int, args ...string) load.Result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	status := run(append([]string{"perf"}, append(args, "--json")...), &stdout, &stderr)
	if status != wantStatus {
		t.Fatalf("sluice perf %s: status %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), status, wantStatus, stdout.String(), stderr.String())
	}
	var res load.Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("sluice perf %s: output is not JSON: %v\n%s", strings.Join(args, " "), err, stdout.String())
	}
	t.Logf("sluice perf %s: %+v", strings.Join(args, " "), res)
	return res
}

// checkLatency checks that a latency summary has count samples and ordered
// percentiles.
func checkLatency(t *testing.T, name string, l *load.Latency, count int64) {
	t.Helper()
	if l == nil {
		t.Fatalf("%s latency missing", name)
	}
	if l.Count != count {
		t.Errorf("%s latency: %d samples, want %d", name, l.Count, count)
	}
	if !(0 <= l.Min && l.Min <= l.P50 && l.P50 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max && l.Mean <= l.Max && l.Max > 0) {
		t.Errorf("%s latency not ordered: %+v", name, *l)
	}
}

// TestPerfProduceConsume produces N records with the settings that take
// different client paths, then consumes exactly what the topic holds.
func TestPerfProduceConsume(t *testing.T) {
	b := brokertest.Start(t, "memory")
	const n = 2000
	tests := []struct {
		name string
		args []string
	}{
		{"acks=all", []string{"--acks", "all", "--producers", "2"}},
		{"acks=1/lz4", []string{"--acks", "1", "--compression", "lz4", "--partitions", "3"}},
		{"acks=0/zstd", []string{"--acks", "0", "--compression", "zstd", "--linger", "0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			topic := "perf-" + strings.NewReplacer("=", "-", "/", "-").Replace(tc.name)
			common := []string{"--brokers", b.Addr(), "--topic", topic, "--record-size", "100", "--quiet"}
			res := runPerf(t, 0, append(append([]string{"produce", "--records", "2000"}, common...), tc.args...)...)
			if res.Records != n || res.Bytes != n*100 || res.Errors != 0 || res.StoppedBy != "records" {
				t.Fatalf("produce: records %d bytes %d errors %d stopped by %s, want %d, %d, 0, records", res.Records, res.Bytes, res.Errors, res.StoppedBy, n, n*100)
			}
			if res.MBPerSec <= 0 || res.RecordsPerSec <= 0 {
				t.Errorf("produce: rates %v records/s, %v MB/s", res.RecordsPerSec, res.MBPerSec)
			}
			checkLatency(t, "produce", res.ProduceLatency, n)
			// acks=0 is answered by nothing: wait until the broker has
			// appended what was sent before reading it back.
			waitEndOffsets(t, b.Addr(), topic, n)

			res = runPerf(t, 0, append([]string{"consume"}, common...)...)
			if res.Records != n || res.Bytes != n*100 || res.Errors != 0 || res.StoppedBy != "end" || res.MBPerSec <= 0 {
				t.Fatalf("consume: records %d bytes %d errors %d stopped by %s, %v MB/s", res.Records, res.Bytes, res.Errors, res.StoppedBy, res.MBPerSec)
			}
			res = runPerf(t, 0, append([]string{"consume", "--records", "500"}, common...)...)
			if res.Records != 500 || res.StoppedBy != "records" {
				t.Fatalf("consume --records 500: records %d, stopped by %s", res.Records, res.StoppedBy)
			}
		})
	}
}

// TestPerfE2E runs e2e at a target rate for a short duration: every acked
// record is consumed and measured.
func TestPerfE2E(t *testing.T) {
	b := brokertest.Start(t, "memory")
	res := runPerf(t, 0, "e2e", "--brokers", b.Addr(), "--topic", "perf-e2e", "--record-size", "64",
		"--target-rate", "500", "--duration", "400ms", "--linger", "0", "--quiet")
	if res.Records == 0 || res.Errors != 0 || res.StoppedBy != "duration" {
		t.Fatalf("e2e: records %d errors %d stopped by %s", res.Records, res.Errors, res.StoppedBy)
	}
	// The rate caps what can be sent: 500/s for 400ms, plus the first.
	if res.Records > 201 {
		t.Errorf("e2e: %d records at 500/s in 400ms", res.Records)
	}
	if res.Consumed != res.Records {
		t.Errorf("e2e: consumed %d of %d", res.Consumed, res.Records)
	}
	checkLatency(t, "produce", res.ProduceLatency, res.Records)
	checkLatency(t, "e2e", res.E2ELatency, res.Records)
}

// TestPerfConsumeEmptyAndMissing: an empty topic ends at once; a missing
// one is an error, not a hang.
func TestPerfConsumeEmptyAndMissing(t *testing.T) {
	b := brokertest.Start(t, "memory")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(context.Background(), 2, -1, nil, "perf-empty"); err != nil {
		t.Fatal(err)
	}
	res := runPerf(t, 0, "consume", "--brokers", b.Addr(), "--topic", "perf-empty", "--quiet")
	if res.StoppedBy != "end" || res.Records != 0 || res.Partitions != 2 {
		t.Errorf("consume of an empty topic: %d records of %d partitions, stopped by %s", res.Records, res.Partitions, res.StoppedBy)
	}

	// A missing topic fails on its own, well before the hard cap: the
	// patience for a just-created topic's leaders is not spent on it.
	var stdout, stderr bytes.Buffer
	start := time.Now()
	if status := run([]string{"perf", "consume", "--brokers", b.Addr(), "--topic", "perf-missing", "--timeout", "60s", "--quiet"}, &stdout, &stderr); status != 2 {
		t.Fatalf("consume of a missing topic: status %d, want 2\n%s", status, stderr.String())
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("consume of a missing topic failed after %v, want a few seconds", d)
	}
	if !strings.Contains(stderr.String(), "perf-missing") {
		t.Errorf("error does not name the topic: %s", stderr.String())
	}
}

// TestPerfTransactional produces inside transactions committed every
// 50ms, adds an aborted transaction, and consumes the topic both ways:
// read_committed reads exactly the committed records, read_uncommitted
// the aborted ones too, and both end at the markers that close the topic's
// partitions instead of waiting for a record that never comes.
func TestPerfTransactional(t *testing.T) {
	b := brokertest.Start(t, "memory")
	const topic = "perf-txn"
	common := []string{"--brokers", b.Addr(), "--topic", topic, "--record-size", "100", "--quiet", "--timeout", "60s"}
	res := runPerf(t, 0, append([]string{"produce", "--records", "3000", "--partitions", "2", "--producers", "2",
		"--target-rate", "6000", "--transactional-id", "perf-txn", "--transaction-ms", "50"}, common...)...)
	if res.Records != 3000 || res.Errors != 0 || res.StoppedBy != "records" {
		t.Fatalf("transactional produce: records %d errors %d stopped by %s", res.Records, res.Errors, res.StoppedBy)
	}
	// 2 producers at 3,000 records/s each for about 0.5s, a commit every
	// 50ms: several transactions each, and one at the end.
	if res.Transactions < 4 || res.CommitLatency == nil || res.CommitLatency.Count != res.Transactions {
		t.Errorf("transactional produce: %d transactions, commit latency %+v", res.Transactions, res.CommitLatency)
	}

	// An aborted transaction of 100 records after them.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.TransactionalID("perf-txn-abort"), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		cl.Produce(ctx, &kgo.Record{Value: make([]byte, 100)}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		isolation string
		want      int64
	}{{"read_committed", 3000}, {"read_uncommitted", 3100}} {
		res = runPerf(t, 0, append([]string{"consume", "--isolation", tc.isolation}, common...)...)
		if res.Records != tc.want || res.Bytes != tc.want*100 || res.Errors != 0 || res.StoppedBy != "end" {
			t.Errorf("consume --isolation %s: records %d bytes %d errors %d stopped by %s, want %d records to the end",
				tc.isolation, res.Records, res.Bytes, res.Errors, res.StoppedBy, tc.want)
		}
	}
}

func TestPerfUsage(t *testing.T) {
	for _, args := range [][]string{
		{"perf"},
		{"perf", "bogus"},
		{"perf", "produce", "--acks", "2"},
		{"perf", "produce", "--compression", "brotli"},
		{"perf", "produce", "--record-size", "8"},
		{"perf", "produce", "--transactional-id", "x", "--acks", "1"},
		{"perf", "produce", "--transactional-id", "x", "--transaction-ms", "0"},
		{"perf", "consume", "--transactional-id", "x"},
		{"perf", "consume", "--isolation", "serializable"},
		{"perf", "produce", "--replication-factor", "-1"},
		{"perf", "produce", "--replication-factor", "32768"},
	} {
		var stdout, stderr bytes.Buffer
		if status := run(args, &stdout, &stderr); status != 2 {
			t.Errorf("%q: status %d, want 2", args, status)
		}
	}
}

// TestPerfReplicationFactor creates the perf topic in a three-broker
// cluster: --replication-factor sets its replicas, --topic-config its
// min.insync.replicas, and acks=all produce and e2e runs go through the
// ISR. Without the flag the topic gets the broker's
// default.replication.factor (1 here).
func TestPerfReplicationFactor(t *testing.T) {
	zk := zktest.Start(t)
	bs := brokertest.StartCluster(t, 3, "memory", zk.Addr())
	seeds := bs[0].Addr() + "," + bs[1].Addr()
	common := []string{"--brokers", seeds, "--record-size", "100", "--quiet", "--timeout", "60s"}
	res := runPerf(t, 0, append([]string{"produce", "--topic", "perf-rf3", "--records", "1000", "--partitions", "2",
		"--replication-factor", "3", "--topic-config", "min.insync.replicas=2", "--acks", "all"}, common...)...)
	if res.Records != 1000 || res.Errors != 0 || res.StoppedBy != "records" {
		t.Fatalf("produce RF 3: records %d errors %d stopped by %s (%s)", res.Records, res.Errors, res.StoppedBy, res.FirstError)
	}
	res = runPerf(t, 0, append([]string{"e2e", "--topic", "perf-rf3-e2e", "--target-rate", "500", "--duration", "300ms",
		"--linger", "0", "--replication-factor", "3"}, common...)...)
	if res.Records == 0 || res.Consumed != res.Records || res.Errors != 0 || res.StoppedBy != "duration" {
		t.Fatalf("e2e RF 3: records %d consumed %d errors %d stopped by %s", res.Records, res.Consumed, res.Errors, res.StoppedBy)
	}
	runPerf(t, 0, append([]string{"produce", "--topic", "perf-rf-default", "--records", "10"}, common...)...)

	cl, err := kgo.NewClient(kgo.SeedBrokers(bs[2].Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	details, err := adm.ListTopics(ctx, "perf-rf3", "perf-rf3-e2e", "perf-rf-default")
	if err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string]struct{ partitions, replicas int }{
		"perf-rf3": {2, 3}, "perf-rf3-e2e": {1, 3}, "perf-rf-default": {1, 1},
	} {
		td := details[topic]
		if td.Err != nil || len(td.Partitions) != want.partitions {
			t.Errorf("%s: %d partitions (err %v), want %d", topic, len(td.Partitions), td.Err, want.partitions)
			continue
		}
		for _, pd := range td.Partitions {
			if len(pd.Replicas) != want.replicas {
				t.Errorf("%s-%d: replicas %v, want %d of them", topic, pd.Partition, pd.Replicas, want.replicas)
			}
		}
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "perf-rf3")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("perf-rf3", nil)
	if err != nil {
		t.Fatal(err)
	}
	var minISR string
	for _, c := range rc.Configs {
		if c.Key == "min.insync.replicas" {
			minISR = c.MaybeValue()
		}
	}
	if minISR != "2" {
		t.Errorf("perf-rf3: min.insync.replicas %q, want 2", minISR)
	}
}

// TestPerfBounded: a run waiting for records that never come ends at the
// hard cap with status 1, and a produce run bounded by duration says so.
func TestPerfBounded(t *testing.T) {
	b := brokertest.Start(t, "memory")
	res := runPerf(t, 0, "produce", "--brokers", b.Addr(), "--topic", "perf-bounded", "--record-size", "32",
		"--duration", "200ms", "--target-rate", "200", "--quiet")
	if res.StoppedBy != "duration" || res.Records == 0 || res.Errors != 0 {
		t.Fatalf("produce --duration: %d records, %d errors, stopped by %s", res.Records, res.Errors, res.StoppedBy)
	}
	want := res.Records + 10
	// --timeout caps the whole run, client setup included: 5s leaves a
	// loaded machine time to set up and read what is there, and is far
	// below the 5m default cap of a run bounded by --records.
	start := time.Now()
	res = runPerf(t, 1, "consume", "--brokers", b.Addr(), "--topic", "perf-bounded", "--quiet",
		"--records", fmt.Sprint(want), "--timeout", "5s")
	took := time.Since(start)
	if res.StoppedBy != "timeout" || res.Records != want-10 {
		t.Fatalf("consume of %d records from %d: read %d, stopped by %s", want, want-10, res.Records, res.StoppedBy)
	}
	if took > 2*time.Minute {
		t.Fatalf("consume with --timeout 5s took %v", took)
	}
}

// waitEndOffsets waits (at most 30 s) until topic's partitions end at n
// records in all.
func waitEndOffsets(t *testing.T, addr, topic string, n int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ends, err := adm.ListEndOffsets(ctx, topic)
		cancel()
		var total int64
		if err == nil {
			ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
		}
		if total >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s ends at %d records after 30 s, want %d (err %v)", topic, total, n, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
