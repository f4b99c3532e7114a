package server

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestListOffsetsRefusals: as Kafka's ReplicaManager.fetchOffset, a
// special timestamp the request's version does not know (-3 below v7, -4
// below v8, -5 below v9, any other negative one) is UNSUPPORTED_VERSION,
// and a partition named twice in one request (v1+) is INVALID_REQUEST
// for each time it is named; the other partitions are answered.
func TestListOffsetsRefusals(t *testing.T) {
	b := startTiered(t, t.TempDir())
	cl := mustClient(t, b.addr)
	if res, err := kadm.NewClient(cl).CreateTopic(context.Background(), 2, 1, nil, "lo"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	produceTiered(t, b.addr, "lo", 0, 3)
	ask := func(version int16, parts ...[2]int64) []kmsg.ListOffsetsResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version, req.ReplicaID = version, -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "lo"
		for _, p := range parts {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = int32(p[0]), p[1], -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		// A client pinned to the version (kgo sends the highest it may).
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(2, version)
		vcl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.MaxVersions(vs))
		if err != nil {
			t.Fatal(err)
		}
		defer vcl.Close()
		resp, err := req.RequestWith(context.Background(), vcl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions
	}
	for _, c := range []struct {
		version int16
		ts      int64
		want    int16
	}{
		{6, -3, kerr.UnsupportedVersion.Code},
		{7, -3, 0},
		{7, -4, kerr.UnsupportedVersion.Code},
		{8, -4, 0},
		{8, -5, kerr.UnsupportedVersion.Code},
		{9, -5, 0},
		{9, -6, kerr.UnsupportedVersion.Code},
		{1, -7, kerr.UnsupportedVersion.Code},
	} {
		if got := ask(c.version, [2]int64{0, c.ts})[0].ErrorCode; got != c.want {
			t.Errorf("v%d timestamp %d: error %d, want %d", c.version, c.ts, got, c.want)
		}
	}
	got := ask(9, [2]int64{0, -1}, [2]int64{1, -1}, [2]int64{0, -2})
	if len(got) != 3 || got[0].ErrorCode != kerr.InvalidRequest.Code || got[2].ErrorCode != kerr.InvalidRequest.Code || got[1].ErrorCode != 0 {
		t.Errorf("partition 0 twice and partition 1 once: %+v", got)
	}
}
