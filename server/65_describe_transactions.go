package server

// DescribeTransactions (key 65), served v0 (KIP-664): the state of each
// transactional id this broker coordinates (NOT_COORDINATOR for the
// others, COORDINATOR_LOAD_IN_PROGRESS while loading,
// TRANSACTIONAL_ID_NOT_FOUND for unknown ids). As Kafka: Describe on the
// TransactionalId is required (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and
// partitions of topics the principal may not Describe are left out.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
)

func handleDescribeTransactions(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.DescribeTransactionsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range r.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		if !s.az.allowedTxnID(rc, acl.OpDescribe, id) {
			st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		d, err := s.txn.Describe(id)
		if st.ErrorCode = txnErrorCode(err, 0, 0); st.ErrorCode != 0 {
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		st.State, st.TimeoutMillis, st.StartTimestamp = d.State.String(), d.TimeoutMs, d.StartMs
		st.ProducerID, st.ProducerEpoch = d.ProducerID, d.ProducerEpoch
		for _, tp := range d.Partitions {
			if !s.az.allowedTopic(rc, acl.OpDescribe, tp.Topic) {
				continue
			}
			if n := len(st.Topics); n == 0 || st.Topics[n-1].Topic != tp.Topic {
				t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				t.Topic = tp.Topic
				st.Topics = append(st.Topics, t)
			}
			t := &st.Topics[len(st.Topics)-1]
			t.Partitions = append(t.Partitions, tp.Partition)
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return kresp(resp), nil
}
