package server

// AddOffsetsToTxn (key 25), served v0-v4.
//
//	v0: transactional id, producer id and epoch, group id
//	v1: no changes
//	v2: no changes (the client knows PRODUCER_FENCED, KIP-588)
//	v3: flexible
//	v4: no changes (the client knows TRANSACTION_ABORTABLE, KIP-890)
//
// The partition of __consumer_offsets that holds the group's offsets,
// coordlog.PartitionFor(group, offsets.topic.num.partitions), joins the
// transaction, so that its markers reach the group coordinator and the
// offsets committed with TxnOffsetCommit become visible (or are dropped)
// with the transaction. As Kafka: Write on the TransactionalId
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then Read on the group
// (GROUP_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/coordlog"
	"github.com/sluice/sluice/offsets"
	"github.com/sluice/sluice/txn"
)

func handleAddOffsetsToTxn(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.AddOffsetsToTxnRequest)
	resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	switch {
	case !s.az.allowedTxnID(rc, acl.OpWrite, r.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return kresp(resp), nil
	case !s.az.allowed(rc, acl.OpRead, acl.ResourceGroup, r.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return kresp(resp), nil
	}
	ctx := context.Background()
	if rc.conn != nil {
		ctx = rc.conn.ctx
	}
	tp := txn.TopicPartition{Topic: offsets.Topic, Partition: s.offsetsPartitionFor(r.Group)}
	err := s.txn.AddPartitions(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, []txn.TopicPartition{tp})
	if resp.ErrorCode = txnErrorCode(err, 2, r.Version); resp.ErrorCode == kerr.UnknownServerError.Code {
		s.log.Error("server: add offsets to transaction", "transactional_id", r.TransactionalID, "group", r.Group, "err", err)
	}
	return kresp(resp), nil
}

// offsetsPartitionFor is the __consumer_offsets partition of group: of the
// topic's partition count when it exists, else of
// offsets.topic.num.partitions (the count it will be created with: no
// group request has created it yet).
func (s *Server) offsetsPartitionFor(group string) int32 {
	n := int32(len(s.md.partitions(offsets.Topic)))
	if n == 0 {
		n = s.cfg.OffsetsTopicPartitions
	}
	return coordlog.PartitionFor(group, n)
}
