package server

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/metrics/metricstest"
)

// TestTieredProduceReportsLogStart: on a tiered partition whose first
// records are remote, the produce response's log_start_offset and the
// kafka_log_log_logstartoffset gauge report the log start offset (Kafka's
// logStartOffset, what ListOffsets -2 answers), not the local log start
// (Kafka's UnifiedLog registers the LogStartOffset gauge as logStartOffset
// and the produce response carries it too). Cases: the log start the
// remote tier holds, then one DeleteRecords raised between it and the
// local start. Before, both reported the local start.
func TestTieredProduceReportsLogStart(t *testing.T) {
	const topic = "reporting"
	b, cl := tieredWithRemote(t, t.TempDir(), topic, 300)
	ctx := context.Background()
	local, _ := listOffset(t, cl, topic, -4)
	if earliest, _ := listOffset(t, cl, topic, -2); earliest != 0 || local <= 40 {
		t.Fatalf("earliest %d, local start %d: want 0 and much remote", earliest, local)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(&stateCollector{s: b.s})
	check := func(want int64) {
		t.Helper()
		for v := int16(5); v <= 9; v += 4 {
			req := kmsg.NewPtrProduceRequest()
			req.SetVersion(v)
			req.Acks, req.TimeoutMillis = -1, 5000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = oneRecordBatch(time.Now().UnixMilli())
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode != 0 || p.LogStartOffset != want {
				t.Fatalf("produce v%d: code %d, log_start_offset %d; want the log start %d (local start %d)", v, p.ErrorCode, p.LogStartOffset, want, local)
			}
		}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		fams := make(map[string]*dto.MetricFamily, len(mfs))
		for _, f := range mfs {
			fams[f.GetName()] = f
		}
		got, ok := metricstest.Value(fams, "kafka_log_log_logstartoffset", map[string]string{"topic": topic, "partition": strconv.Itoa(0)})
		if !ok || got != float64(want) {
			t.Fatalf("kafka_log_log_logstartoffset = %v (found %v), want the log start %d (local start %d)", got, ok, want, local)
		}
	}
	check(0)

	start := local / 2
	rs, err := kadm.NewClient(cl).DeleteRecords(ctx, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: start}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := rs.Lookup(topic, 0); r.Err != nil || r.LowWatermark != start {
		t.Fatalf("delete records before %d: low watermark %d, %v", start, r.LowWatermark, r.Err)
	}
	check(start)
}
