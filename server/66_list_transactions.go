package server

// ListTransactions (key 66), served v0-v1 (KIP-664).
//
//	v0: state and producer id filters; unknown state names are echoed
//	v1: duration filter: transactions running at least that long (KIP-994)
//
// v2 (a transactional id pattern, KIP-1152) is not served. The
// transactional ids of every __transaction_state partition this broker
// leads (COORDINATOR_LOAD_IN_PROGRESS while one loads); ids the principal
// may not Describe are left out, as Kafka does.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/txn"
)

func handleListTransactions(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.ListTransactionsRequest)
	resp := r.ResponseKind().(*kmsg.ListTransactionsResponse)
	var f txn.ListFilter
	for _, name := range r.StateFilters {
		st, ok := txn.ParseState(name)
		if !ok {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
			continue
		}
		f.States = append(f.States, st)
	}
	if len(r.StateFilters) > 0 && len(f.States) == 0 {
		return kresp(resp), nil // only unknown states: nothing matches
	}
	f.ProducerIDs = r.ProducerIDFilters
	if r.Version >= 1 && r.DurationFilterMillis >= 0 {
		f.MinDuration = time.Duration(r.DurationFilterMillis) * time.Millisecond
	}
	list, err := s.txn.List(f)
	if resp.ErrorCode = txnErrorCode(err, 0, 0); resp.ErrorCode != 0 {
		if resp.ErrorCode == kerr.UnknownServerError.Code {
			s.log.Error("server: list transactions", "err", err)
		}
		return kresp(resp), nil
	}
	for _, t := range list {
		if !s.az.allowedTxnID(rc, acl.OpDescribe, t.TransactionalID) {
			continue
		}
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = t.TransactionalID, t.ProducerID, t.State.String()
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return kresp(resp), nil
}
