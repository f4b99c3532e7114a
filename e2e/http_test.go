package e2e

// The HTTP side of a real `sluice serve`: /readyz answers 503 while the
// logs recover after a crash and 200 after, and /healthz answers 200
// throughout.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestReadyzDuringRecovery(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir, "log.segment.bytes=8388608")
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()

	// A log whose recovery takes observable time: many partitions, each
	// with data past its recovery point (the broker never checkpoints one
	// here), so that after SIGKILL every log is re-validated and its
	// indexes rebuilt as it opens.
	const partitions, perPartition, valueSize = 200, 30, 32 << 10
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, "big"); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	value := make([]byte, valueSize)
	for i := range value {
		value[i] = byte(i*7 + i>>8)
	}
	var recs []*kgo.Record
	for p := range partitions {
		for range perPartition {
			recs = append(recs, &kgo.Record{Topic: "big", Partition: int32(p), Value: value})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cl.Close()
	b.kill()

	// Restart and poll from the moment the process starts.
	logs, err := os.Create(filepath.Join(t.TempDir(), "restart.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	cmd := exec.Command(sluiceBinary(t), b.args...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // only the process this test started
		<-exited
	})
	hc := &http.Client{Timeout: 5 * time.Second}
	get := func(path string) (int, string, error) {
		resp, err := hc.Get("http://" + b.httpAddr + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), nil
	}
	var saw503 bool
	var notReady string
	var first time.Time // the first answer
	n503 := 0
	deadline := time.Now().Add(40 * time.Second)
	for {
		select {
		case err := <-exited:
			data, _ := os.ReadFile(logs.Name())
			t.Fatalf("broker exited: %v\n%s", err, data)
		default:
		}
		if time.Now().After(deadline) {
			data, _ := os.ReadFile(logs.Name())
			t.Fatalf("not ready within 40s (saw 503: %v)\n%s", saw503, data)
		}
		code, body, err := get("/readyz")
		if err != nil { // not listening yet
			time.Sleep(2 * time.Millisecond)
			continue
		}
		if first.IsZero() {
			first = time.Now()
		}
		if hcode, _, err := get("/healthz"); err != nil || hcode != 200 {
			t.Fatalf("/healthz during start: %d %v", hcode, err)
		}
		if code == 200 {
			break
		}
		if code != 503 {
			t.Fatalf("/readyz: %d %s", code, body)
		}
		var rd struct {
			Ready    bool     `json:"ready"`
			NotReady []string `json:"notReady"`
		}
		if err := json.Unmarshal([]byte(body), &rd); err != nil || rd.Ready || len(rd.NotReady) == 0 {
			t.Fatalf("/readyz 503 body: %s (%v)", body, err)
		}
		saw503, notReady = true, strings.Join(rd.NotReady, "; ")
		n503++
		time.Sleep(5 * time.Millisecond)
	}
	if !saw503 {
		data, _ := os.ReadFile(logs.Name())
		t.Fatalf("/readyz was never 503 during recovery\n%s", data)
	}
	if !strings.Contains(notReady, "log recovery") {
		t.Errorf("503 said %q, want log recovery named", notReady)
	}
	if code, _, err := get("/healthz"); err != nil || code != 200 {
		t.Fatalf("/healthz after start: %d %v", code, err)
	}
	// The data survived: every partition has its records.
	cl2, err := kgo.NewClient(kgo.SeedBrokers(b.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	ends, err := kadm.NewClient(cl2).ListEndOffsets(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset != perPartition {
			t.Errorf("partition %d ends at %d, want %d", o.Partition, o.Offset, perPartition)
		}
	})
	t.Logf("%d answers 503 over %v; the last said: %s", n503, time.Since(first), notReady)
}
