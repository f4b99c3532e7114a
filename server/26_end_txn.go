package server

// EndTxn (key 26), served v0-v4.
//
//	v0: transactional id, producer id and epoch, commit or abort
//	v1: no changes
//	v2: no changes (the client knows PRODUCER_FENCED, KIP-588)
//	v3: flexible
//	v4: no changes (the client knows TRANSACTION_ABORTABLE, KIP-890)
//
// v5 (transactions version 2, an epoch bump at every end) is not served.
// The answer comes once PrepareCommit or PrepareAbort is written; the
// markers and the Complete state follow (package txn), and meanwhile the
// producer's next transaction waits with CONCURRENT_TRANSACTIONS. Write on
// the TransactionalId is required (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
)

func handleEndTxn(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.EndTxnRequest)
	resp := r.ResponseKind().(*kmsg.EndTxnResponse)
	if !s.az.allowedTxnID(rc, acl.OpWrite, r.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return kresp(resp), nil
	}
	ctx := context.Background()
	if rc.conn != nil {
		ctx = rc.conn.ctx
	}
	err := s.txn.EndTxn(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit)
	if resp.ErrorCode = txnErrorCode(err, 2, r.Version); resp.ErrorCode == kerr.UnknownServerError.Code {
		s.log.Error("server: end transaction", "transactional_id", r.TransactionalID, "err", err)
	}
	return kresp(resp), nil
}
