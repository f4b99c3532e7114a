package server

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/replication"
)

// listOffsetEpoch is ListOffsets v9 of topic-0 at ts: offset, leader
// epoch, error code.
func listOffsetEpoch(t *testing.T, cl *kgo.Client, topic string, ts int64) (int64, int32, int16) {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 9
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = ts, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	return p.Offset, p.LeaderEpoch, p.ErrorCode
}

// TestTieredListOffsetsEpochs: ListOffsets answers each offset with the
// leader epoch it was written in, as Kafka's UnifiedLog.fetchOffsetByTimestamp:
// -2 (the remote log start) the epoch of the first remote segment, -4
// (earliest local, v8) epochForOffset(local log start), -5 (latest
// tiered, v9) epochForOffset(highest remote offset), a timestamp the
// epoch of the record found (remote or local) and -1 the current leader
// epoch; no record found answers epoch -1. Before, every one of them
// answered the current leader epoch.
func TestTieredListOffsetsEpochs(t *testing.T) {
	b := startTiered(t, t.TempDir())
	const topic, perEpoch = "epochs", 150
	cl := mustClient(t, b.addr)
	createSmallTiered(t, kadm.NewClient(cl), topic)
	p := b.s.rm.Partition(topic, 0)
	id := b.s.currentConfig().BrokerID
	bump := func(epoch int32) {
		t.Helper()
		if err := p.MakeLeader(replication.LeaderAndIsr{Leader: id, LeaderEpoch: epoch, ISR: []int32{id}, Replicas: []int32{id}}); err != nil {
			t.Fatal(err)
		}
	}
	// Offsets [0, 150) in epoch 0, [150, 300) in epoch 1; then epoch 2
	// begins with nothing written in it.
	produceTiered(t, b.addr, topic, 0, perEpoch)
	bump(1)
	produceTiered(t, b.addr, topic, perEpoch, perEpoch)
	bump(2)
	b.s.tiered.RunOnce()

	local, _, code := listOffsetEpoch(t, cl, topic, -4)
	if code != 0 || local <= perEpoch || local >= 2*perEpoch {
		t.Fatalf("earliest local %d (code %d): the test wants it in epoch 1's offsets", local, code)
	}
	tieredEnd, _, _ := listOffsetEpoch(t, cl, topic, -5)
	if tieredEnd < perEpoch {
		t.Fatalf("latest tiered %d: the test wants it in epoch 1's offsets", tieredEnd)
	}
	for _, c := range []struct {
		name      string
		ts        int64
		off       int64
		wantEpoch int32
	}{
		{"earliest (remote start)", -2, 0, 0},
		{"earliest local", -4, local, 1},
		{"latest tiered", -5, tieredEnd, 1},
		{"latest", -1, 2 * perEpoch, 2},
		{"a remote record's timestamp", tieredTimeBase + 5*10, 5, 0},
		{"a local record's timestamp", tieredTimeBase + (2*perEpoch-2)*10, 2*perEpoch - 2, 1},
		{"no record that late", tieredTimeBase + 10*perEpoch*10, -1, -1},
	} {
		off, epoch, code := listOffsetEpoch(t, cl, topic, c.ts)
		if off != c.off || epoch != c.wantEpoch || code != 0 {
			t.Errorf("%s: offset %d epoch %d (code %d), want offset %d epoch %d", c.name, off, epoch, code, c.off, c.wantEpoch)
		}
	}

	// A topic that is not tiered: nothing is remote, -5 is offset -1 with
	// epoch -1 (Kafka's answer when remote storage is off).
	if res, err := kadm.NewClient(cl).CreateTopic(context.Background(), 1, 1, nil, "plain"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	produceTiered(t, b.addr, "plain", 0, 3)
	if off, epoch, code := listOffsetEpoch(t, cl, "plain", -5); off != -1 || epoch != -1 || code != 0 {
		t.Errorf("latest tiered of a topic not tiered: offset %d epoch %d (code %d), want -1 -1", off, epoch, code)
	}
}
