package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	_ "github.com/sluice/sluice/engine/pebblelog"
	"github.com/sluice/sluice/record"
	_ "github.com/sluice/sluice/segment"
)

// TestAlterConfigsReachesEveryPartition: the logs of a topic share one
// interned LogConfig (engine.SharedLogConfig) with every other log of the
// same configuration, here those of another topic. AlterConfigs on one
// topic must reach all of its partitions and none of the other topic's:
// with segment.bytes and retention.bytes made tiny on topic "a", retention
// cuts every partition of "a" and no partition of "b". On every
// persistent backend.
func TestAlterConfigsReachesEveryPartition(t *testing.T) {
	for _, backend := range []string{"segment", "pebble"} {
		t.Run("backend="+backend, func(t *testing.T) {
			s := newBackendTestServer(t, backend)
			const parts = 4
			s.rm.Lock()
			for _, name := range []string{"a", "b"} {
				if _, err := s.createTopicLocked(topicSpec{name: name, partitions: parts, rf: 1}); err != nil {
					s.rm.Unlock()
					t.Fatal(err)
				}
			}
			s.rm.Unlock()

			req := kmsg.NewPtrAlterConfigsRequest()
			res := kmsg.NewAlterConfigsRequestResource()
			res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "a"
			for k, v := range map[string]string{"segment.bytes": "14", "retention.bytes": "1"} {
				c := kmsg.NewAlterConfigsRequestResourceConfig()
				c.Name, c.Value = k, kmsg.StringPtr(v)
				res.Configs = append(res.Configs, c)
			}
			req.Resources = append(req.Resources, res)
			resp := mustCall(t, s, 2, req).(*kmsg.AlterConfigsResponse)
			if ec := resp.Resources[0].ErrorCode; ec != 0 {
				t.Fatalf("AlterConfigs: %s", code(ec))
			}

			now := time.Now()
			for _, name := range []string{"a", "b"} {
				tp := s.rm.Topic(name)
				if len(tp.Parts) != parts {
					t.Fatalf("topic %s: %d partitions", name, len(tp.Parts))
				}
				for _, p := range tp.Parts {
					for i := range 3 {
						if _, err := p.Append(context.Background(), oneRecordBatch(now.UnixMilli()+int64(i)), 1); err != nil {
							t.Fatalf("%s-%d: append: %v", name, p.Index(), err)
						}
					}
					if _, err := p.Log().ApplyRetention(now); err != nil {
						t.Fatalf("%s-%d: retention: %v", name, p.Index(), err)
					}
					start := p.Log().StartOffset()
					if cut := start > 0; cut != (name == "a") {
						t.Errorf("%s-%d: log start %d after retention: the altered config %s", name, p.Index(), start,
							map[bool]string{true: "reached it", false: "did not reach it"}[name == "a" && cut || name == "b" && !cut])
					}
				}
			}
		})
	}
}

// newBackendTestServer is newTestServer on a store of backend.
func newBackendTestServer(t *testing.T, backend string) *Server {
	t.Helper()
	return newTestServerOn(t, backend, nil, Options{ClusterID: fmt.Sprintf("shared-%s", backend),
		AdvertisedHost: "127.0.0.1", AdvertisedPort: 9092})
}

// oneRecordBatch returns a batch of one record with timestamp ts.
func oneRecordBatch(ts int64) []byte {
	return record.AppendBatch(nil, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]record.BuildRecord{{Key: []byte("k"), Value: []byte("v"), Timestamp: ts}})
}
