package server_test

import (
	"context"
	"crypto/rand"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/internal/testenv"
	"github.com/sluice/sluice/internal/zktest"
)

func setQuota(t *testing.T, adm *kadm.Client, typ, name, key string, v float64) {
	t.Helper()
	res, err := adm.AlterClientQuotas(context.Background(), []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: typ, Name: &name}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: key, Value: v}},
	}})
	if err == nil && len(res) == 1 && res[0].Err != nil {
		err = res[0].Err
	}
	if err != nil {
		t.Fatalf("set %s %s %s=%v: %v", typ, name, key, v, err)
	}
}

func createTopicsRaw(t *testing.T, addr string, version int16, parts int32, names ...string) *kmsg.CreateTopicsResponse {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(version)
	req.TimeoutMillis = 10000
	for _, n := range names {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = n, parts, 1
		req.Topics = append(req.Topics, rt)
	}
	return dialRaw(t, addr).Do(req).(*kmsg.CreateTopicsResponse)
}

// TestQuotaControllerMutation (KIP-599): with controller_mutation_rate=1
// (a burst of 10 partitions), a strict CreateTopics (v6+) is accepted
// while tokens remain, even when it takes the bucket below zero, then
// THROTTLING_QUOTA_EXCEEDED per topic with the time to wait; a
// permissive one (v5) creates and only throttles; DeleteTopics v5+ is
// strict too. The throttled connection is muted for the throttle time
// (KIP-219): its next request is not answered sooner.
func TestQuotaControllerMutation(t *testing.T) {
	t.Parallel() // waits on session and request timers, not the CPU
	b := brokertest.Start(t, "memory")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	setQuota(t, kadm.NewClient(cl), "user", "ANONYMOUS", "controller_mutation_rate", 1)

	if r := createTopicsRaw(t, b.Addr(), 7, 8, "m1"); r.Topics[0].ErrorCode != 0 || r.ThrottleMillis != 0 {
		t.Fatalf("m1: %v, throttle %d", kerr.ErrorForCode(r.Topics[0].ErrorCode), r.ThrottleMillis)
	}
	// 2 tokens left: accepted, leaving -6 (6 s to wait).
	r := createTopicsRaw(t, b.Addr(), 7, 8, "m2", "m3")
	if r.Topics[0].ErrorCode != 0 || r.Topics[1].ErrorCode != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("m2, m3: %v, %v", kerr.ErrorForCode(r.Topics[0].ErrorCode), kerr.ErrorForCode(r.Topics[1].ErrorCode))
	}
	if r.ThrottleMillis < 5000 || r.ThrottleMillis > 6000 {
		t.Fatalf("throttle %d ms, want about 6000", r.ThrottleMillis)
	}
	// Permissive (v5): created, throttled.
	if r := createTopicsRaw(t, b.Addr(), 5, 1, "m4"); r.Topics[0].ErrorCode != 0 || r.ThrottleMillis <= 0 {
		t.Fatalf("v5: %v, throttle %d", kerr.ErrorForCode(r.Topics[0].ErrorCode), r.ThrottleMillis)
	}
	// DeleteTopics v6 is strict.
	rc := dialRaw(t, b.Addr())
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.SetVersion(6)
	del.TimeoutMillis = 10000
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr("m1")
	del.Topics = append(del.Topics, dt)
	dr := rc.Do(del).(*kmsg.DeleteTopicsResponse)
	if dr.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || dr.ThrottleMillis <= 0 {
		t.Fatalf("delete: %v, throttle %d", kerr.ErrorForCode(dr.Topics[0].ErrorCode), dr.ThrottleMillis)
	}
	// The connection is muted for the throttle: a lower bound only (a
	// slow machine makes it longer, never shorter).
	start := time.Now()
	rc.Do(kmsg.NewPtrMetadataRequest())
	if waited, want := time.Since(start), time.Duration(dr.ThrottleMillis)*time.Millisecond*9/10; waited < want {
		t.Fatalf("next request answered after %v, before the %d ms throttle", waited, dr.ThrottleMillis)
	}
}

// TestQuotaFetchThrottle: a consumer over consumer_byte_rate gets an
// empty answer with a throttle time (Kafka's throttled fetch), and never
// more than a quota window's worth in one fetch.
func TestQuotaFetchThrottle(t *testing.T) {
	b := brokertest.Start(t, "memory")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("f"), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(context.Background(), 1, 1, nil, "f"); err != nil {
		t.Fatal(err)
	}
	val := make([]byte, 1024)
	rand.Read(val)
	for i := 0; i < 100; i++ {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: val}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	const rate = 4096 // a window's worth: 10 x 4 KiB
	setQuota(t, adm, "client-id", "rawconn", "consumer_byte_rate", rate)
	offset := int64(0)
	throttled := false
	for i := 0; i < 20 && !throttled; i++ {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(12)
		req.MaxBytes, req.ReplicaID = 1<<20, -1
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "f"
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.FetchOffset, fp.PartitionMaxBytes = offset, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp := dialRaw(t, b.Addr()).Do(req).(*kmsg.FetchResponse)
		if resp.ThrottleMillis > 0 {
			throttled = true
			if len(resp.Topics) != 0 {
				t.Fatalf("throttled fetch carries %d topics", len(resp.Topics))
			}
			break
		}
		p := resp.Topics[0].Partitions[0]
		if len(p.RecordBatches) > 10*rate+2048 {
			t.Fatalf("fetch of %d bytes, above a quota window (%d)", len(p.RecordBatches), 10*rate)
		}
		if len(p.RecordBatches) == 0 {
			t.Fatal("empty fetch without a throttle")
		}
		offset += int64(len(p.RecordBatches) / (1024 + 70)) // about: advance past what came
	}
	if !throttled {
		t.Fatal("never throttled")
	}
}

// TestQuotaClusterPropagation: a quota set through broker 1 is written to
// ZooKeeper and enforced by broker 2 (through /config/changes), and its
// removal there too.
func TestQuotaClusterPropagation(t *testing.T) {
	testenv.NeedsProcess(t, "ZooKeeper")
	zk := zktest.Start(t)
	bs := brokertest.StartCluster(t, 2, "memory", zk.Addr())
	cl1, err := kgo.NewClient(kgo.SeedBrokers(bs[0].Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl1.Close()
	adm1 := kadm.NewClient(cl1)
	// One partition, led by broker 2, which must learn of the quota
	// from ZooKeeper.
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "qp", -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{2}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	ct.Topics = append(ct.Topics, rt)
	if r := dialRaw(t, bs[0].Addr()).Do(ct).(*kmsg.CreateTopicsResponse); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("create qp: %v", kerr.ErrorForCode(r.Topics[0].ErrorCode))
	}
	setQuota(t, adm1, "client-id", "qp-client", "producer_byte_rate", 1024)

	// Broker 2 describes it (it reads ZooKeeper) ...
	cl2, err := kgo.NewClient(kgo.SeedBrokers(bs[1].Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	got, err := kadm.NewClient(cl2).DescribeClientQuotas(context.Background(), false, nil)
	if err != nil || len(got) != 1 || len(got[0].Values) != 1 || got[0].Values[0].Value != 1024 {
		t.Fatalf("broker 2 describes %+v, %v", got, err)
	}
	// ... and enforces it.
	h := &countThrottles{}
	val := make([]byte, 32<<10)
	rand.Read(val)
	p, err := kgo.NewClient(kgo.SeedBrokers(bs[1].Addr()), kgo.ClientID("qp-client"), kgo.DefaultProduceTopic("qp"),
		kgo.WithHooks(h), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 0; h.n.Load() == 0 && i < 100; i++ { // 10 KiB pass unthrottled; 3.2 MB would take ~50 min
		if err := p.ProduceSync(context.Background(), &kgo.Record{Value: val}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if h.n.Load() == 0 {
		t.Fatal("broker 2 never throttled the client")
	}
	// Close stops each broker's quota watch before it returns.
	p.Close()
	for _, b := range bs {
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 1<<20)
	if stacks := string(buf[:runtime.Stack(buf, true)]); strings.Contains(stacks, "WatchQuotaChanges") {
		t.Fatal("a quota watch still runs after Close")
	}
}

type countThrottles struct{ n atomic.Int64 }

func (h *countThrottles) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.n.Add(1)
	}
}

// TestQuotaRequestPercentage: a client over request_percentage is
// throttled by at most one quota window (ClientRequestQuotaManager), on
// any API that carries a throttle time, ApiVersions included once the
// connection is authenticated (Kafka's handleApiVersionsRequest).
func TestQuotaRequestPercentage(t *testing.T) {
	b := brokertest.Start(t, "memory")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	setQuota(t, kadm.NewClient(cl), "client-id", "rawconn", "request_percentage", 1e-9)
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	if r := dialRaw(t, b.Addr()).Do(md).(*kmsg.MetadataResponse); r.ThrottleMillis <= 0 || r.ThrottleMillis > 1000 {
		t.Fatalf("Metadata throttle %d ms, want (0, 1000]", r.ThrottleMillis)
	}
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "x", "1"
	if r := dialRaw(t, b.Addr()).Do(av).(*kmsg.ApiVersionsResponse); r.ThrottleMillis <= 0 || r.ThrottleMillis > 1000 {
		t.Fatalf("ApiVersions throttle %d ms, want (0, 1000]", r.ThrottleMillis)
	}
}
