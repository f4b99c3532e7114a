package group

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/metastore"
)

// BenchmarkConsumerSteadyHeartbeat measures a heartbeat of a member of a
// stable group that changes nothing (no record is written): the cost every
// member pays each group.consumer.heartbeat.interval.ms.
func BenchmarkConsumerSteadyHeartbeat(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			store, err := metastore.Open(b.TempDir(), metastore.Options{Logger: quietLogger()})
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			opts := Options{Store: store, Clock: newFakeClock(), Logger: quietLogger(), RetentionCheckInterval: -1,
				Topics: newFakeTopics(map[string]int32{"t": int32(n * 2)})}
			fillHooks(&opts)
			c, err := New(opts)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			hb := func(member string, epoch int32, topics []string, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) *kmsg.ConsumerGroupHeartbeatResponse {
				req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
				req.Version, req.Group, req.MemberID, req.MemberEpoch = 1, "g", member, epoch
				req.SubscribedTopicNames, req.Topics, req.RebalanceTimeoutMillis = topics, owned, -1
				if epoch == 0 {
					req.RebalanceTimeoutMillis, req.Topics = 5000, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
				}
				resp, err := c.Handle(context.Background(), req)
				if err != nil {
					b.Fatal(err)
				}
				r := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
				if r.ErrorCode != 0 {
					b.Fatalf("heartbeat %s: %d", member, r.ErrorCode)
				}
				return r
			}
			type st struct {
				epoch int32
				owned []kmsg.ConsumerGroupHeartbeatRequestTopic
			}
			ms := make([]st, n)
			for i := range n {
				r := hb(fmt.Sprintf("m%d", i), 0, []string{"t"}, nil)
				ms[i] = st{r.MemberEpoch, ownedOfResp(r.Assignment)}
			}
			// Reconcile everyone to the last target.
			for range 3 {
				for i := range n {
					r := hb(fmt.Sprintf("m%d", i), ms[i].epoch, nil, ms[i].owned)
					ms[i].epoch = r.MemberEpoch
					if r.Assignment != nil {
						ms[i].owned = ownedOfResp(r.Assignment)
					}
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m := i % n
				hb(fmt.Sprintf("m%d", m), ms[m].epoch, nil, nil)
			}
		})
	}
}
