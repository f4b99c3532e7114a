package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduceManyPartitionsAllocs: a produce request with one small batch
// for each of many partitions (the OMB shape over 10,000 partitions: a
// keyed producer's request carries hundreds of one-record batches)
// allocates per request, not per partition. One goroutine (and its
// closure) per partition was 10% of the broker's CPU under `sluice perf
// omb` at 10,000 partitions, in their start and stack growth.
func TestProduceManyPartitionsAllocs(t *testing.T) {
	const parts = 256
	s := newTestServerOn(t, "segment", nil, Options{ClusterID: "manyparts"})
	s.rm.Lock()
	_, err := s.createTopicLocked(topicSpec{name: "many", partitions: parts, rf: 1})
	s.rm.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	r := kmsg.NewPtrProduceRequest()
	r.SetVersion(9)
	r.Acks, r.TimeoutMillis = 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "many"
	batch := oneRecord()
	for p := range parts {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = int32(p)
		rp.Records = append([]byte(nil), batch...) // the append sets its base offset in place
		rt.Partitions = append(rt.Partitions, rp)
	}
	r.Topics = []kmsg.ProduceRequestTopic{rt}
	produce := func() {
		out, err := handleProduce(s, nil, r)
		if err != nil {
			t.Fatal(err)
		}
		resp := out.kresp.(*kmsg.ProduceResponse)
		for _, sp := range resp.Topics[0].Partitions {
			if sp.ErrorCode != 0 {
				t.Fatalf("partition %d: error %d", sp.Partition, sp.ErrorCode)
			}
		}
	}
	produce() // the first append of each partition opens its files
	allocs := testing.AllocsPerRun(10, produce)
	t.Logf("%.0f allocations per request of %d partitions", allocs, parts)
	if allocs >= parts {
		t.Fatalf("%.0f allocations per produce request of %d one-batch partitions: one or more per partition", allocs, parts)
	}
}
