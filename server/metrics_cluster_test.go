package server

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/metrics"
	"github.com/sluice/sluice/record"
)

// newFakeClusterMetricsServer is newFakeClusterServer with metrics on;
// mod, if set, edits the config first.
func newFakeClusterMetricsServer(t *testing.T, mod func(*config.Config)) (*Server, *fakePlane, *metrics.Metrics) {
	t.Helper()
	cfg := config.Default()
	cfg.BrokerID = 1
	cfg.NumPartitions = 2
	cfg.DefaultReplicationFactor = 3
	if mod != nil {
		mod(&cfg)
	}
	fp := newFakePlane()
	m := metrics.New()
	s := newTestServer(t, &cfg, Options{
		ClusterID: "fake", AdvertisedHost: "127.0.0.1", AdvertisedPort: 9092, Metrics: m,
		controlPlane: func(s *Server) controlPlane { fp.s = s; return fp },
	})
	return s, fp, m
}

// gather returns the registry's families by name.
func gather(t *testing.T, m *metrics.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// series returns the value of the series of family name whose labels
// include want, and whether there is one.
func series(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, mt := range f.Metric {
		have := map[string]string{}
		for _, l := range mt.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case mt.Counter != nil:
			return mt.Counter.GetValue(), true
		case mt.Gauge != nil:
			return mt.Gauge.GetValue(), true
		}
		return 0, true
	}
	return 0, false
}

// produceOne produces one record to topic-p with acks and returns the
// partition's error code.
func produceOne(t *testing.T, s *Server, topic string, p int32, acks int16, timeoutMs int32) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, timeoutMs
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = p
	rp.Records = record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]record.BuildRecord{{Key: []byte("k"), Value: []byte("v"), Timestamp: 1}})
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return mustCall(t, s, 9, req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// stopReplicas sends StopReplica (delete) for topic's partitions.
func stopReplicas(t *testing.T, s *Server, topic string, parts ...int32) {
	t.Helper()
	sreq := kmsg.NewPtrStopReplicaRequest()
	sreq.ControllerID, sreq.ControllerEpoch, sreq.BrokerEpoch = 2, 5, fakeBrokerEpoch
	st := kmsg.NewStopReplicaRequestTopic()
	st.Topic = topic
	for _, p := range parts {
		ps := kmsg.NewStopReplicaRequestTopicPartitionState()
		ps.Partition, ps.LeaderEpoch, ps.Delete = p, -2, true
		st.PartitionStates = append(st.PartitionStates, ps)
	}
	sreq.Topics = append(sreq.Topics, st)
	for _, rp := range mustCall(t, s, 3, sreq).(*kmsg.StopReplicaResponse).Partitions {
		if rp.ErrorCode != 0 {
			t.Fatalf("StopReplica %s-%d: %s", topic, rp.Partition, code(rp.ErrorCode))
		}
	}
}

// TestMetricsStopReplicaRemovesTopic: in cluster mode a deleted topic
// leaves through StopReplica; its per-topic series go with its last local
// replica, not before.
func TestMetricsStopReplicaRemovesTopic(t *testing.T) {
	s, fp, m := newFakeClusterMetricsServer(t, nil)
	id := fp.addTopic("t", 1, 1)
	mustCall(t, s, 5, leaderAndIsr("t", id, 0, 1, 1, 5))
	mustCall(t, s, 5, leaderAndIsr("t", id, 1, 1, 1, 5))
	if c := produceOne(t, s, "t", 0, 1, 5000); c != 0 {
		t.Fatalf("produce: %s", code(c))
	}
	in := map[string]string{"topic": "t"}
	if _, ok := series(gather(t, m), "kafka_server_brokertopicmetrics_messagesin_total", in); !ok {
		t.Fatal("no messagesin series for t after a produce")
	}
	fp.deleteTopic(t.Context(), "t")
	stopReplicas(t, s, "t", 0)
	if _, ok := series(gather(t, m), "kafka_server_brokertopicmetrics_messagesin_total", in); !ok {
		t.Fatal("t's series removed while t-1 is still here")
	}
	stopReplicas(t, s, "t", 1)
	if _, ok := series(gather(t, m), "kafka_server_brokertopicmetrics_messagesin_total", in); ok {
		t.Fatal("t's series still exported after StopReplica deleted its last replica here")
	}
}

// TestMetricsProduceCountsAppendedOnISRTimeout: an acks=all produce whose
// records were appended here but whose wait for the ISR timed out still
// counts its records in MessagesIn (Kafka counts at the local append).
func TestMetricsProduceCountsAppendedOnISRTimeout(t *testing.T) {
	s, fp, m := newFakeClusterMetricsServer(t, nil)
	id := fp.addTopic("t", 1)
	mustCall(t, s, 5, leaderAndIsr("t", id, 0, 1, 1, 5)) // ISR {1,2,3}: nobody fetches
	if c := produceOne(t, s, "t", 0, -1, 50); c != kerr.RequestTimedOut.Code {
		t.Fatalf("acks=all produce without followers: %s, want REQUEST_TIMED_OUT", code(c))
	}
	if end := s.partition("t", 0).Log().EndOffset(); end != 1 {
		t.Fatalf("log end %d: the record was not appended", end)
	}
	fams := gather(t, m)
	for _, topic := range []string{"t", ""} {
		if v, _ := series(fams, "kafka_server_brokertopicmetrics_messagesin_total", map[string]string{"topic": topic}); v != 1 {
			t.Errorf("messagesin{topic=%q} = %v, want 1", topic, v)
		}
		if v, _ := series(fams, "kafka_server_brokertopicmetrics_bytesin_total", map[string]string{"topic": topic}); v <= 0 {
			t.Errorf("bytesin{topic=%q} = %v, want > 0", topic, v)
		}
		if v, _ := series(fams, "kafka_server_brokertopicmetrics_failedproducerequests_total", map[string]string{"topic": topic}); v != 0 {
			t.Errorf("failedproducerequests{topic=%q} = %v, want 0", topic, v)
		}
	}
}
