package server

// DescribeProducers (key 61), served v0 (KIP-664): the producers a
// partition leader knows (its producer state: idempotent and transactional
// producers not expired), with their epoch, last sequence, last write time,
// coordinator epoch and the first offset of their open transaction (-1:
// none). Read on the topic (TOPIC_AUTHORIZATION_FAILED per partition, as
// Kafka's KafkaApis.handleDescribeProducersRequest); a partition led
// elsewhere is NOT_LEADER_OR_FOLLOWER, an unknown one
// UNKNOWN_TOPIC_OR_PARTITION.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
)

func handleDescribeProducers(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.DescribeProducersRequest)
	resp := r.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, t := range r.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		allowed := s.az.allowedTopic(rc, acl.OpRead, t.Topic)
		for _, part := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = part
			if !allowed {
				rp.ErrorCode = errorCode(errTopicAuthorization)
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			p, err := s.lookup.leaderPartition(t.Topic, part)
			if err != nil {
				rp.ErrorCode = errorCode(err)
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			for _, pi := range p.Producers() {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID, ap.ProducerEpoch = pi.ProducerID, int32(pi.ProducerEpoch)
				ap.LastSequence, ap.LastTimestamp = pi.LastSequence, pi.LastTimestampMs
				ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = pi.CoordinatorEpoch, pi.CurrentTxnStartOffset
				rp.ActiveProducers = append(rp.ActiveProducers, ap)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return kresp(resp), nil
}
