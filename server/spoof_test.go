package server_test

// A single-node broker on a PLAINTEXT port, attacked with spoofed
// controller and follower requests: each is sent by hand over a raw
// connection and refused (the controller's requests, which a single node
// does not serve, by closing the connection; the others with Kafka's
// error code), and harmless (the partition still serves every record, the
// advertised address is unchanged).

import (
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
)

func TestSingleNodeRefusesSpoofedRequests(t *testing.T) {
	b := brokertest.Start(t, "segment")
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
	createTopic(t, adm, "victim", 1, nil)
	rc := dialRaw(t, b.Addr())
	for i := range 10 {
		resp := rc.Do(produceReq(9, -1, "victim", 0, buildBatch(-1, -1, -1, 10, int64(i)))).(*kmsg.ProduceResponse)
		if c := resp.Topics[0].Partitions[0].ErrorCode; c != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(c))
		}
	}

	check := func(name string, got, want int16) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %v, want %v", name, kerr.ErrorForCode(got), kerr.ErrorForCode(want))
		}
	}

	// StopReplica with delete and leader epoch -1 (wipe the partition).
	sr := kmsg.NewPtrStopReplicaRequest()
	sr.SetVersion(3)
	sr.ControllerID, sr.ControllerEpoch, sr.BrokerEpoch = 0, math.MaxInt32, -1
	st := kmsg.NewStopReplicaRequestTopic()
	st.Topic = "victim"
	ps := kmsg.NewStopReplicaRequestTopicPartitionState()
	ps.Partition, ps.LeaderEpoch, ps.Delete = 0, -1, true
	st.PartitionStates = append(st.PartitionStates, ps)
	sr.Topics = append(sr.Topics, st)

	// LeaderAndIsr from "controller" epoch MaxInt32 making broker 99 leader.
	lr := kmsg.NewPtrLeaderAndISRRequest()
	lr.SetVersion(5)
	lr.ControllerID, lr.ControllerEpoch, lr.BrokerEpoch = 99, math.MaxInt32, -1
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic = "victim"
	lps := kmsg.NewLeaderAndISRRequestTopicPartition()
	lps.Partition, lps.Leader, lps.LeaderEpoch, lps.ISR, lps.Replicas = 0, 99, math.MaxInt32, []int32{99}, []int32{99}
	ts.PartitionStates = append(ts.PartitionStates, lps)
	lr.TopicStates = append(lr.TopicStates, ts)

	// UpdateMetadata pointing clients at another host.
	ur := kmsg.NewPtrUpdateMetadataRequest()
	ur.SetVersion(7)
	ur.ControllerID, ur.ControllerEpoch, ur.BrokerEpoch = 0, math.MaxInt32, -1
	lb := kmsg.NewUpdateMetadataRequestLiveBroker()
	lb.ID, lb.Host, lb.Port = 0, "203.0.113.7", 9092
	ur.LiveBrokers = append(ur.LiveBrokers, lb)

	// ControlledShutdown of this broker.
	cr := kmsg.NewPtrControlledShutdownRequest()
	cr.SetVersion(3)
	cr.BrokerID, cr.BrokerEpoch = 0, -1

	// A single node does not serve the controller's APIs: each closes
	// its connection, as any API key Sluice does not serve.
	for _, req := range []kmsg.Request{sr, lr, ur, cr} {
		c := dialRaw(t, b.Addr())
		c.Send(req)
		c.ExpectClosed()
	}

	// A follower fetch (replica id 5, and v15 with an epoch): refused, no
	// bytes past anything.
	for _, v := range []int16{11, 15} {
		fr := kmsg.NewPtrFetchRequest()
		fr.SetVersion(v)
		fr.ReplicaID, fr.ReplicaState.ID, fr.ReplicaState.Epoch = 5, 5, 1
		fr.MaxBytes = 1 << 20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = "victim", topicID(t, adm, "victim")
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = 0, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
		fr.Topics = append(fr.Topics, ft)
		resp := rc.Do(fr).(*kmsg.FetchResponse)
		p := resp.Topics[0].Partitions[0]
		check("follower Fetch", p.ErrorCode, kerr.ClusterAuthorizationFailed.Code)
		if len(p.RecordBatches) != 0 {
			t.Errorf("follower fetch v%d got %d bytes", v, len(p.RecordBatches))
		}
	}

	// The internal topic: clients may neither create it in another shape
	// nor write it.
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.SetVersion(7)
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = "__consumer_offsets", 1, 1
	ct.Topics = append(ct.Topics, ctt)
	check("CreateTopics __consumer_offsets", rc.Do(ct).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode, kerr.InvalidTopicException.Code)

	// Harmless: every record is still there, the address is unchanged,
	// and the broker still serves.
	ends, err := adm.ListEndOffsets(testCtx(t, 10*time.Second), "victim")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("victim", 0); o.Offset != 100 {
		t.Fatalf("victim-0 ends at %d, want 100", o.Offset)
	}
	starts, err := adm.ListStartOffsets(testCtx(t, 10*time.Second), "victim")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("victim", 0); o.Offset != 0 {
		t.Fatalf("victim-0 starts at %d, want 0", o.Offset)
	}
	md := rc.Do(kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse)
	if len(md.Brokers) != 1 || md.Brokers[0].Host != "127.0.0.1" {
		t.Fatalf("metadata brokers %+v", md.Brokers)
	}
}

func topicID(t *testing.T, adm *kadm.Client, topic string) [16]byte {
	t.Helper()
	td, err := adm.ListTopics(testCtx(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	return td[topic].ID
}
