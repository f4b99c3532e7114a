package server_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/offsets"
	"github.com/sluice/sluice/tiered"
	"github.com/sluice/sluice/txn"
)

// TestDeleteRecordsInternalTopics: DeleteRecords on __consumer_offsets or
// __transaction_state is INVALID_TOPIC_EXCEPTION for every principal allowed
// to delete (no authorizer, a super user), as Kafka's
// ReplicaManager.deleteRecordsOnLocalLog answers, and leaves the log start
// where it was; a principal without Delete still gets
// TOPIC_AUTHORIZATION_FAILED first.
func TestDeleteRecordsInternalTopics(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(*config.Config)
		want error
	}{
		{"authorizer=none", func(*config.Config) {}, kerr.InvalidTopicException},
		{"principal=super", func(c *config.Config) {
			c.AuthorizerClassName = "kafka.security.authorizer.AclAuthorizer"
			c.SuperUsers = []string{"User:ANONYMOUS"}
		}, kerr.InvalidTopicException},
		{"principal=denied", func(c *config.Config) {
			c.AuthorizerClassName = "kafka.security.authorizer.AclAuthorizer"
		}, kerr.TopicAuthorizationFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := brokertest.Start(t, "memory", tc.cfg)
			adm := kadm.NewClient(newClient(t, b.Addr()))
			ctx := testCtx(t, 30*time.Second)
			rc := dialRaw(t, b.Addr())
			// Finding a coordinator creates the internal topics (refused,
			// and not needed, for the denied principal).
			adm.FindGroupCoordinators(ctx, "g")
			adm.FindTxnCoordinators(ctx, "tx")
			for _, topic := range []string{offsets.Topic, txn.Topic} {
				if tc.want != kerr.TopicAuthorizationFailed {
					waitLeader(t, adm, topic)
				}
				req := kmsg.NewPtrDeleteRecordsRequest()
				rt := kmsg.NewDeleteRecordsRequestTopic()
				rt.Topic = topic
				rp := kmsg.NewDeleteRecordsRequestTopicPartition()
				rp.Offset = -1 // the high watermark
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				sp := rc.Do(req).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
				if err := kerr.ErrorForCode(sp.ErrorCode); err != tc.want || sp.LowWatermark != -1 {
					t.Errorf("%s: DeleteRecords answered %v (low watermark %d), want %v", topic, err, sp.LowWatermark, tc.want)
				}
			}
		})
	}
}

// waitLeader waits until partition 0 of topic answers ListOffsets.
func waitLeader(t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	ctx := testCtx(t, 20*time.Second)
	for {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err == nil {
			if o, ok := ends.Lookup(topic, 0); ok && o.Err == nil {
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("%s partition 0 has no leader: %v", topic, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestInternalTopicsKeepTheirShape: a super user cannot delete, add
// partitions to, or change the cleanup.policy of an internal topic with
// either AlterConfigs, and the topic keeps its partition.
func TestInternalTopicsKeepTheirShape(t *testing.T) {
	b := brokertest.Start(t, "memory", func(c *config.Config) {
		c.AuthorizerClassName = "kafka.security.authorizer.AclAuthorizer"
		c.SuperUsers = []string{"User:ANONYMOUS"}
	})
	adm := kadm.NewClient(newClient(t, b.Addr()))
	ctx := testCtx(t, 30*time.Second)
	adm.FindGroupCoordinators(ctx, "g")
	adm.FindTxnCoordinators(ctx, "tx")
	policy := []kadm.AlterConfig{{Name: "cleanup.policy", Value: kmsg.StringPtr("delete")}}
	for _, topic := range []string{offsets.Topic, txn.Topic} {
		waitLeader(t, adm, topic)
		for _, tc := range []struct {
			name string
			do   func() error // the topic's answer, else the request's error
			want error
		}{
			{"DeleteTopics", func() error {
				r, _ := adm.DeleteTopic(ctx, topic) // the error repeats r.Err
				return r.Err
			}, kerr.TopicAuthorizationFailed},
			{"CreatePartitions", func() error {
				r, err := adm.CreatePartitions(ctx, 1, topic)
				if err != nil {
					return err
				}
				return r[topic].Err
			}, kerr.InvalidTopicException},
			{"IncrementalAlterConfigs", func() error {
				r, err := adm.AlterTopicConfigs(ctx, policy, topic)
				if err != nil || len(r) == 0 {
					return err
				}
				return r[0].Err
			}, kerr.TopicAuthorizationFailed},
			{"AlterConfigs", func() error {
				r, err := adm.AlterTopicConfigsState(ctx, policy, topic)
				if err != nil || len(r) == 0 {
					return err
				}
				return r[0].Err
			}, kerr.TopicAuthorizationFailed},
		} {
			t.Run("topic="+topic+"/api="+tc.name, func(t *testing.T) {
				if got := tc.do(); got != tc.want {
					t.Errorf("answered %v, want %v", got, tc.want)
				}
			})
		}
		if md, err := adm.Metadata(ctx, topic); err != nil || len(md.Topics[topic].Partitions) == 0 {
			t.Errorf("%s after the refusals: %v %+v", topic, err, md.Topics[topic])
		}
	}
}

// TestRemoteLogMetadataKeepsItsPartitionCount: CreatePartitions on
// __remote_log_metadata is INVALID_PARTITIONS and leaves its count, since the
// remote log metadata is spread over its partitions by a hash modulo that
// count; an ordinary topic still grows.
func TestRemoteLogMetadataKeepsItsPartitionCount(t *testing.T) {
	b := brokertest.Start(t, "memory")
	adm := kadm.NewClient(newClient(t, b.Addr()))
	ctx := testCtx(t, 30*time.Second)
	for _, topic := range []string{tiered.RemoteLogMetadataTopic, "plain"} {
		if r, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, r.Err)
		}
		waitLeader(t, adm, topic)
	}
	for topic, want := range map[string]error{tiered.RemoteLogMetadataTopic: kerr.InvalidPartitions, "plain": nil} {
		r, err := adm.CreatePartitions(ctx, 1, topic)
		if err != nil {
			t.Fatal(err)
		}
		if got := r[topic].Err; got != want {
			t.Errorf("CreatePartitions %s: %v, want %v", topic, got, want)
		}
	}
	md, err := adm.Metadata(ctx, tiered.RemoteLogMetadataTopic)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(md.Topics[tiered.RemoteLogMetadataTopic].Partitions); n != 2 {
		t.Errorf("%s has %d partitions after the refusal, want 2", tiered.RemoteLogMetadataTopic, n)
	}
}
