package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

// TestTopicDescribeCopyLag: `sluice topic describe` of a tiered topic
// shows, beside the tiering lag in offsets, the copy lag in bytes and in
// segments that the partition's leader measured at its last task run
// (Kafka's RemoteCopyLagBytes and RemoteCopyLagSegments): "-" until a run,
// then what is left to copy (nothing, once every rolled segment is remote).
func TestTopicDescribeCopyLag(t *testing.T) {
	dir := t.TempDir()
	b := brokertest.StartIn(t, filepath.Join(dir, "logs"), "segment", func(c *config.Config) {
		c.RemoteLogStorageSystemEnable = true
		c.RemoteLogManagerTaskInterval = 100 * time.Millisecond
		c.RemoteStorageProperties = map[string]string{"rsm.config.dir": filepath.Join(dir, "remote")}
	})
	sl := func(args ...string) string {
		t.Helper()
		var stdout, stderr strings.Builder
		if code := run(append(args, "--bootstrap-server", b.Addr()), &stdout, &stderr); code != 0 {
			t.Fatalf("sluice %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	sl("topic", "create", "tiered", "--config", "segment.bytes=2048", "--config", "local.retention.bytes=4096", "--config", "remote.storage.enable=true")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("tiered"), kgo.MaxBufferedRecords(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := 0; i < 100; i++ {
		if err := cl.ProduceSync(context.Background(), kgo.StringRecord(fmt.Sprintf("record-%03d-%s", i, strings.Repeat("x", 100)))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var row map[string]string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		out := sl("topic", "describe", "tiered")
		row = tieredRowOf(out)
		if row != nil && row["COPY-LAG-SEGMENTS"] == "0" && row["TIERED-END"] != "-" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no copy lag of 0 segments shown after a minute of task runs:\n%s", out)
		}
	}
	if row["COPY-LAG-BYTES"] != "0B" {
		t.Fatalf("copy lag bytes %q with no segment left to copy: %v", row["COPY-LAG-BYTES"], row)
	}
}

// tieredRowOf is partition 0's row of describe's tiering table by column
// name, nil when there is none.
func tieredRowOf(out string) map[string]string {
	var header []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == "PARTITION" && strings.Contains(l, "LOCAL-START") {
			header = f
			continue
		}
		if header != nil && len(f) == len(header) && f[0] == "0" {
			row := map[string]string{}
			for i, h := range header {
				row[h] = f[i]
			}
			return row
		}
	}
	return nil
}
