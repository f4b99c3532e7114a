package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testenv"
)

// systemPython is Debian's interpreter, the one python3-kafka installs
// into; python3 on PATH may be another interpreter without it.
const systemPython = "/usr/bin/python3"

// needKafkaPython returns systemPython if it can import kafka-python,
// failing under CI=true (make test installs python3-kafka) and skipping
// elsewhere, as need does for programs.
func needKafkaPython(t *testing.T) string {
	t.Helper()
	testenv.NeedsProcess(t, systemPython+" with kafka-python")
	out, err := exec.Command(systemPython, "-c", "import kafka; print(kafka.__version__)").CombinedOutput()
	if err != nil {
		msg := systemPython + " cannot import kafka (python3-kafka): " + strings.TrimSpace(string(out))
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s (make test installs it)", msg)
		}
		t.Skipf("%s; run make test-deps", msg)
	}
	t.Logf("kafka-python %s", strings.TrimSpace(string(out)))
	return systemPython
}

// pythonSummary is the JSON line testdata/kafka_python_compat.py prints last.
type pythonSummary struct {
	OK               bool           `json:"ok"`
	Error            string         `json:"error"`
	Variant          string         `json:"variant"`
	Consumed         int            `json:"consumed"`
	ProducerVersion  []int          `json:"producer_api_version"`
	ConsumerVersion  []int          `json:"consumer_api_version"`
	CommittedFirst   map[string]int `json:"committed_first"`
	CommittedSecond  map[string]int `json:"committed_second"`
	Requests         map[string]int `json:"requests"`
	CreateTopicsVers int            `json:"create_topics_version"`
}

// TestKafkaPython runs kafka-python (2.0.x, Debian's python3-kafka) against
// a real broker: the admin client creates a 3-partition topic, a producer
// (acks=all) sends keyed messages with headers, a consumer group member
// consumes and checks all of them and commits, and a second member of the
// same group resumes from the commit with exactly the messages produced
// after it. The script checks every message and the request versions
// kafka-python sent; see testdata/kafka_python_compat.py.
//
// Variants: kafka-python probing the broker with ApiVersions v0 (it settles
// on 2.4.0, as Sluice serves no DescribeAcls), plain and gzip; and pinned to
// api_version=(0, 11, 0), the oldest that uses record format v2 (Produce
// v3, Fetch v4). The 2-tuple (0, 11) does not work by design: kafka-python
// compares it with (0, 11, 0), finds it lower and sends Fetch v3, which a
// v2-only broker does not serve.
func TestKafkaPython(t *testing.T) {
	t.Parallel()
	py := needKafkaPython(t)
	script, err := filepath.Abs(filepath.Join("testdata", "kafka_python_compat.py"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(script); err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, t.TempDir(), "num.partitions=3", "group.initial.rebalance.delay.ms=100")
	const n, m = 3000, 500
	for _, v := range []struct {
		name, compression, apiVersion string
		wantProduce                   string
	}{
		{"probe", "none", "auto", "ProduceRequest_v7"},
		{"probe-gzip", "gzip", "auto", "ProduceRequest_v7"},
		{"pinned-0.11.0-gzip", "gzip", "0.11.0", "ProduceRequest_v3"},
	} {
		t.Run(v.name, func(t *testing.T) {
			topic, group := "kpy-"+v.name, "kpy-group-"+v.name
			stdout, stderr, err := run(t, 120*time.Second, "", py, script,
				"--bootstrap", b.addr, "--topic", topic, "--group", group,
				"--n", strconv.Itoa(n), "--m", strconv.Itoa(m),
				"--compression", v.compression, "--api-version", v.apiVersion, "--timeout", "90")
			fail := func(format string, args ...any) {
				t.Helper()
				t.Logf("script stdout:\n%s", stdout)
				t.Logf("script stderr:\n%s", stderr)
				t.Logf("broker log:\n%s", b.logText())
				t.Fatalf(format, args...)
			}
			if err != nil {
				fail("kafka_python_compat.py: %v", err)
			}
			ls := lines(stdout)
			if len(ls) == 0 {
				fail("kafka_python_compat.py printed no summary")
			}
			var s pythonSummary
			if err := json.Unmarshal([]byte(ls[len(ls)-1]), &s); err != nil {
				fail("summary line %q: %v", ls[len(ls)-1], err)
			}
			if !s.OK || s.Consumed != n+m {
				fail("summary: ok=%v consumed=%d (want %d) error=%q", s.OK, s.Consumed, n+m, s.Error)
			}
			if s.Requests[v.wantProduce] == 0 || s.Requests["FetchRequest_v4"] == 0 {
				fail("kafka-python did not send %s and FetchRequest_v4: %v", v.wantProduce, s.Requests)
			}
			if v.apiVersion == "auto" && (s.Requests["ApiVersionRequest_v0"] == 0 || s.Requests["MetadataRequest_v0"] == 0) {
				fail("kafka-python did not probe with ApiVersions v0 and Metadata v0: %v", s.Requests)
			}
			total := 0
			for _, o := range s.CommittedSecond {
				total += o
			}
			if total != n+m {
				fail("committed offsets %v sum to %d, want %d", s.CommittedSecond, total, n+m)
			}
			t.Logf("%s: producer api_version %v, requests %v", s.Variant, s.ProducerVersion, s.Requests)
		})
	}
	// kafka-python never sent a request version the broker refuses (it
	// would close the connection and log why).
	if logs := b.logText(); strings.Contains(logs, "unsupported") {
		t.Errorf("broker refused a request from kafka-python:\n%s", logs)
	}
	if err := b.stop(); err != nil {
		t.Errorf("clean stop: %v\n%s", err, b.logText())
	}
}
