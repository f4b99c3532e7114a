package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/kraw"
	"github.com/sluice/sluice/internal/zktest"
)

// burrowConfig is burrow.toml for Burrow 1.2.1 (Debian's package) watching
// a broker or a cluster: its own state in ZooKeeper (required), a cluster module that
// polls the partitions' offsets with ListOffsets v0 (at any kafka-version),
// a consumer module that reads __consumer_offsets (Fetch v4 at
// kafka-version 0.11.0 and above; below it, sarama's Fetch v0-v2 need
// magic v0/v1 records, which Sluice does not serve), and the HTTP API.
const burrowConfig = `[general]
pidfile="%[1]s/burrow.pid"

[logging]
level="info"

[zookeeper]
servers=["%[2]s"]
timeout=6
root-path="/burrow"

[client-profile.sluice]
client-id="burrow-e2e"
kafka-version="2.0.0"

[cluster.sluice]
class-name="kafka"
servers=[%[3]s]
client-profile="sluice"
topic-refresh=2
offset-refresh=1

[consumer.sluice]
class-name="kafka"
cluster="sluice"
servers=[%[3]s]
client-profile="sluice"
offsets-topic="__consumer_offsets"

[httpserver.default]
address="%[4]s"

[storage.default]
class-name="inmemory"
workers=2
intervals=10
expire-group=604800
min-distance=1
`

// burrowLag is the part of Burrow's /v3/kafka/<cluster>/consumer/<group>/lag
// answer the test reads.
type burrowLag struct {
	Error   bool   `json:"error"`
	Message string `json:"message"`
	Status  struct {
		Status     string `json:"status"`
		TotalLag   int64  `json:"totallag"`
		Partitions []struct {
			Topic      string `json:"topic"`
			Partition  int32  `json:"partition"`
			CurrentLag int64  `json:"current_lag"`
			End        struct {
				Offset int64 `json:"offset"`
			} `json:"end"`
		} `json:"partitions"`
	} `json:"status"`
}

// TestBurrowLag runs Debian's Burrow (LinkedIn's consumer-lag monitor,
// 1.2.1, sarama 1.20) against a Sluice broker. A franz-go consumer group
// commits offsets on a 3-partition topic with a known lag per partition;
// Burrow, which reads the committed offsets from __consumer_offsets itself
// and the log end offsets with ListOffsets v0, must report the lag that
// `sluice group describe` and kadm report. Then the group commits again and
// more records arrive: Burrow follows. The broker must close no Burrow
// connection for an unsupported request.
func TestBurrowLag(t *testing.T) {
	t.Parallel()
	burrow := need(t, "Burrow")
	zk := zktest.Start(t)
	b := startBroker(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	burrowLagAgainst(t, burrow, zk.Addr(), []*brokerProc{b}, "1")
}

// TestBurrowLagCluster is TestBurrowLag against three brokers and
// ZooKeeper: the partitions' leaders and the group's coordinator are
// spread over the brokers, and Burrow asks each leader for its offsets.
func TestBurrowLagCluster(t *testing.T) {
	t.Parallel()
	burrow := need(t, "Burrow")
	c := startCluster(t, 3)
	end := burrowLagAgainst(t, burrow, c.zk.Addr(), []*brokerProc{c.brokers[1], c.brokers[2], c.brokers[3]}, "3")

	// ListOffsets v0 to a follower: NOT_LEADER_OR_FOLLOWER for a consumer,
	// the follower's own log end for the debugging replica id (-2), as
	// Kafka's fetchOnlyFromLeader allows.
	leader, followers := c.followersOf("burrow-lag")
	rc := kraw.Dial(t, c.brokers[followers[0]].addr)
	ask := func(replicaID int32) kmsg.ListOffsetsResponseTopicPartition {
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(0)
		req.ReplicaID = replicaID
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "burrow-lag"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp, rp.MaxNumOffsets = -1, 1
		rt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{rp}
		req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
		return rc.Do(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	}
	if p := ask(-1); p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("consumer's v0 to follower %d (leader %d): %v %v", followers[0], leader, kerr.ErrorForCode(p.ErrorCode), p.OldStyleOffsets)
	}
	var p kmsg.ListOffsetsResponseTopicPartition
	for i := 0; i < 100; i++ { // the follower may still be fetching the last batch
		if p = ask(-2); p.ErrorCode == 0 && len(p.OldStyleOffsets) == 1 && p.OldStyleOffsets[0] == end[0] {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("debugging v0 to follower %d: %v %v, want [%d]", followers[0], kerr.ErrorForCode(p.ErrorCode), p.OldStyleOffsets, end[0])
}

// burrowLagAgainst is the body of the Burrow tests: brokers are running,
// the topic gets replication factor rf, Burrow keeps its own state in the
// ZooKeeper at zkAddr.
// It returns the log end offset of each partition of the topic.
func burrowLagAgainst(t *testing.T, burrow, zkAddr string, brokers []*brokerProc, rf string) map[int32]int64 {
	const topic, group = "burrow-lag", "burrow-group"
	b := brokers[0]
	var seeds []string
	for _, bp := range brokers {
		seeds = append(seeds, bp.addr)
	}
	cliOK(t, b.addr, "topic", "create", topic, "--partitions", "3", "--replication-factor", rf)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	end := map[int32]int64{}
	produce := func(p int32, n int) {
		t.Helper()
		for range n {
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatalf("produce to %d: %v", p, err)
			}
			end[p]++
		}
	}
	produce(0, 40)
	produce(1, 25)
	produce(2, 10)

	// A group member consumes everything, then commits offsets that leave
	// lag 30, 5 and 10 (nothing committed on partition 2 is lag 10 for
	// Burrow only once an offset exists: commit 0 there).
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for got := 0; got < 75; {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of 75 records: %v", got, err)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", tp, p, err) })
		got += fs.NumRecords()
	}
	commit := func(offsets map[int32]int64) {
		t.Helper()
		m := map[string]map[int32]kgo.EpochOffset{topic: {}}
		for p, o := range offsets {
			m[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
		}
		var cerr error
		cons.CommitOffsetsSync(ctx, m, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				cerr = err
				return
			}
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					if rp.ErrorCode != 0 && cerr == nil {
						cerr = fmt.Errorf("partition %d: error code %d", rp.Partition, rp.ErrorCode)
					}
				}
			}
		})
		if cerr != nil {
			t.Fatalf("commit %v: %v", offsets, cerr)
		}
	}
	committed := map[int32]int64{0: 10, 1: 20, 2: 0}
	commit(committed)

	// Burrow starts once __consumer_offsets exists (its consumer module
	// reads the partition count at start).
	dir := t.TempDir()
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg := fmt.Sprintf(burrowConfig, dir, zkAddr, `"`+strings.Join(seeds, `", "`)+`"`, httpAddr)
	if err := os.WriteFile(filepath.Join(dir, "burrow.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "burrow.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(burrow, "-config-dir", dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		// Stop only the process this test started, by its pid.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	burrowLog := func() string { data, _ := os.ReadFile(logPath); return string(data) }
	brokerLogs := func() string {
		var all strings.Builder
		for _, bp := range brokers {
			all.WriteString(bp.logText())
		}
		return all.String()
	}

	// wantLag is what `sluice group describe` and kadm say the lag is; it
	// must equal end - committed.
	wantLag := func() map[int32]int64 {
		t.Helper()
		want := map[int32]int64{}
		for p := range end {
			want[p] = end[p] - committed[p]
		}
		out := cliOK(t, b.addr, "group", "describe", group).stdout
		for _, r := range table(t, out, "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET") {
			p, _ := strconv.Atoi(r["PARTITION"])
			if r["TOPIC"] != topic || r["LAG"] != strconv.FormatInt(want[int32(p)], 10) {
				t.Fatalf("sluice group describe row %v, want lag %d\n%s", r, want[int32(p)], out)
			}
		}
		lags, err := kadm.NewClient(prod).Lag(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		l := lags[group]
		if l.Error() != nil {
			t.Fatal(l.Error())
		}
		for p, w := range want {
			if ml, ok := l.Lag.Lookup(topic, p); !ok || ml.Err != nil || ml.Lag != w {
				t.Fatalf("kadm lag of partition %d: %+v, want %d", p, ml, w)
			}
		}
		return want
	}

	// waitBurrow polls Burrow's lag API (bounded) until it reports want.
	waitBurrow := func(step string, want map[int32]int64) {
		t.Helper()
		url := "http://" + httpAddr + "/v3/kafka/sluice/consumer/" + group + "/lag"
		var last string
		for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
			select {
			case err := <-done:
				t.Fatalf("%s: Burrow exited: %v\n%s", step, err, burrowLog())
			default:
			}
			resp, err := http.Get(url)
			if err != nil {
				last = err.Error()
				continue
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = string(body)
			var bl burrowLag
			if json.Unmarshal(body, &bl) != nil || bl.Error {
				continue
			}
			got := map[int32]int64{}
			var total int64
			for _, p := range bl.Status.Partitions {
				if p.Topic == topic {
					got[p.Partition] = p.CurrentLag
					total += p.CurrentLag
				}
			}
			if len(got) == len(want) && total == bl.Status.TotalLag && maps.Equal(got, want) {
				t.Logf("%s: Burrow reports lag %v (status %s), as sluice group describe", step, got, bl.Status.Status)
				return
			}
		}
		t.Fatalf("%s: Burrow did not report lag %v within 90s; last answer:\n%s\nBurrow log:\n%s\nbroker log:\n%s",
			step, want, last, burrowLog(), brokerLogs())
	}

	waitBurrow("first commit", wantLag())

	// The group moves on and the topic grows: Burrow follows both.
	produce(2, 7)
	committed = map[int32]int64{0: 35, 1: 25, 2: 12}
	commit(committed)
	waitBurrow("second commit", wantLag())

	// Burrow's topic endpoint has the log end offsets it polled.
	resp, err := http.Get("http://" + httpAddr + "/v3/kafka/sluice/topic/" + topic)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var to struct {
		Offsets []int64 `json:"offsets"`
	}
	if err := json.Unmarshal(body, &to); err != nil || len(to.Offsets) != 3 || to.Offsets[0] != end[0] || to.Offsets[1] != end[1] || to.Offsets[2] != end[2] {
		t.Fatalf("topic offsets %s, want %v", body, end)
	}
	if logs := brokerLogs(); strings.Contains(logs, "unsupported") || strings.Contains(logs, `WARN msg="server: closing connection"`) {
		t.Fatalf("the broker refused a Burrow request:\n%s", logs)
	}
	return end
}
