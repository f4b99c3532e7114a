package server_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

// TestFollowerFetchWithoutClusterAction: a follower fetch (a replica id)
// from a principal without ClusterAction answers TOPIC_AUTHORIZATION_FAILED
// for every partition, as Kafka's handleFetchRequest does.
func TestFollowerFetchWithoutClusterAction(t *testing.T) {
	b := brokertest.Start(t, "memory", func(c *config.Config) {
		c.AuthorizerClassName = "kafka.security.authorizer.AclAuthorizer"
	})
	rc := dialRaw(t, b.Addr())
	fr := kmsg.NewPtrFetchRequest()
	fr.SetVersion(11)
	fr.ReplicaID, fr.MaxBytes = 5, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	for p := range int32(2) {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = p, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
	}
	fr.Topics = append(fr.Topics, ft)
	resp := rc.Do(fr).(*kmsg.FetchResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
		t.Fatalf("answer %+v, want topic t with 2 partitions", resp.Topics)
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("partition %d: %v, want TOPIC_AUTHORIZATION_FAILED", p.Partition, kerr.ErrorForCode(p.ErrorCode))
		}
	}
}
