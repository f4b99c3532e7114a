package server

// AddPartitionsToTxn (key 24), served v0-v3: the client path.
//
//	v0: transactional id, producer id and epoch, topics with partitions
//	v1: no changes (the client may see retriable errors sooner)
//	v2: no changes (the client knows PRODUCER_FENCED, KIP-588)
//	v3: flexible
//
// v4 (KIP-890: brokers verifying transactions in batches) and v5
// (transactions version 2) are not served: Sluice's partitions do not ask
// the coordinator whether a transactional produce belongs to an ongoing
// transaction.
//
// As Kafka's KafkaApis: Write on the TransactionalId is required
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition), then Write
// on each topic; internal topics cannot be added (their partitions join
// through AddOffsetsToTxn). If any partition is refused or unknown
// (TOPIC_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_OR_PARTITION) none is added
// and the others answer OPERATION_NOT_ATTEMPTED; otherwise the
// coordinator's answer goes to every partition.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/txn"
)

func handleAddPartitionsToTxn(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.AddPartitionsToTxnRequest)
	resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	codes := make(map[txn.TopicPartition]int16)
	var tps []txn.TopicPartition
	failed := false
	txnDenied := !s.az.allowedTxnID(rc, acl.OpWrite, r.TransactionalID)
	for _, t := range r.Topics {
		var code int16
		switch {
		case txnDenied:
			code = kerr.TransactionalIDAuthorizationFailed.Code
		case isInternalTopic(t.Topic) || !s.az.allowedTopic(rc, acl.OpWrite, t.Topic):
			code = kerr.TopicAuthorizationFailed.Code
		}
		n := int32(len(s.md.partitions(t.Topic)))
		for _, p := range t.Partitions {
			tp := txn.TopicPartition{Topic: t.Topic, Partition: p}
			c := code
			if c == 0 && (p < 0 || p >= n) {
				c = kerr.UnknownTopicOrPartition.Code
			}
			if c != 0 {
				failed = true
			}
			codes[tp] = c
			tps = append(tps, tp)
		}
	}
	if failed {
		for tp, c := range codes {
			if c == 0 && !txnDenied {
				codes[tp] = kerr.OperationNotAttempted.Code
			}
		}
	} else if len(tps) > 0 {
		ctx := context.Background()
		if rc.conn != nil {
			ctx = rc.conn.ctx
		}
		err := s.txn.AddPartitions(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, tps)
		code := txnErrorCode(err, 2, r.Version)
		if code == kerr.UnknownServerError.Code {
			s.log.Error("server: add partitions to transaction", "transactional_id", r.TransactionalID, "err", err)
		}
		for _, tp := range tps {
			codes[tp] = code
		}
	}
	for _, t := range r.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, codes[txn.TopicPartition{Topic: t.Topic, Partition: p}]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return kresp(resp), nil
}
