package e2e

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConsoleTieredTopicSplit: the console's page of a tiered topic shows
// its local/remote split: each partition's local log start (past its
// remote start once local retention has run) and its bytes in the remote
// tier, and the topic's remote size.
func TestConsoleTieredTopicSplit(t *testing.T) {
	b := startBroker(t, filepath.Join(t.TempDir(), "data"),
		"remote.log.storage.system.enable=true", "remote.log.manager.task.interval.ms=100")
	const topic = "tiered-page"
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{
		"remote.storage.enable": kadm.StringPtr("true"), "segment.bytes": kadm.StringPtr("2048"),
		"local.retention.bytes": kadm.StringPtr("4096"),
	}, topic); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("value-" + strconv.Itoa(i) + "-0123456789abcdef0123456789abcdef")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// Bounded wait until local retention has moved the local start.
	var localStart int64
	for deadline := time.Now().Add(60 * time.Second); localStart <= 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("local log start still %d\n%s", localStart, b.logText())
		}
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version, req.ReplicaID = 8, -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp, rp.CurrentLeaderEpoch = -4, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		if resp, err := req.RequestWith(ctx, cl); err == nil && len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
			localStart = resp.Topics[0].Partitions[0].Offset
		}
	}

	tab := browserTab(t)
	browse(t, tab, consoleURL(b, "topics/"+topic))
	type split struct {
		Start, LocalStart, RemoteSize, TopicRemote string
	}
	got := waitJS(t, tab, "the local/remote split", `(() => {
		const r = document.querySelector("tr[data-partition='0']");
		const rs = document.getElementById("topic-remote-size");
		if (!r || !rs || !r.querySelector("[data-col=local-start]")) return {};
		return {Start: r.querySelector("[data-col=start]").textContent,
			LocalStart: r.querySelector("[data-col=local-start]").textContent,
			RemoteSize: r.querySelector("[data-col=remote-size]").textContent,
			TopicRemote: rs.textContent};
	})()`, func(s split) bool { return s.LocalStart != "" && s.LocalStart != "0" })
	shown, err := strconv.ParseInt(got.LocalStart, 10, 64)
	if got.Start != "0" || err != nil || shown < localStart || got.RemoteSize == "0 B" || got.RemoteSize == "" || got.TopicRemote != got.RemoteSize {
		t.Errorf("topic page split %+v; want start 0, local start >= %d (ListOffsets -4), a remote size, the topic's remote size equal to its one partition's", got, localStart)
	}
	screenshot(t, tab, "tiered-topic")
}
