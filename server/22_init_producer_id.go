package server

// InitProducerId (key 22), served v0-v4.
//
//	v0: transactional id and timeout; producer id and epoch in the response
//	v1: throttle time
//	v2: flexible
//	v3: producer id and epoch in the request, to bump an epoch (KIP-360)
//	v4: no changes (the client may see PRODUCER_FENCED)
//
// Idempotent producers (null transactional id) get a fresh producer id with
// epoch 0 on every call, including a v3+ re-initialization: as in Kafka, a
// producer without a transactional id simply starts over under a new id.
// Ids come from metastore.AllocateProducerIDs in blocks, so an id is never
// handed out twice, even across restarts (the unused rest of a block is
// skipped). As Kafka's handleInitProducerIdRequest, they need
// IdempotentWrite on the cluster or Write on some topic, decided by
// authorizeByResourceType: a PREFIXED grant, or a grant for a topic that
// does not exist yet, counts (CLUSTER_AUTHORIZATION_FAILED otherwise).
//
// A transactional id goes to the transaction coordinator (package txn):
// Write on the TransactionalId resource is required, checked before
// anything else, an empty id included (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); the id gets a producer id and
// a bumped epoch, an ongoing transaction of the previous producer is
// aborted first (CONCURRENT_TRANSACTIONS until it is, then the retry
// succeeds), a stale v3+ producer id and epoch is PRODUCER_FENCED
// (INVALID_PRODUCER_EPOCH before v4), and transaction.timeout.ms above
// transaction.max.timeout.ms is INVALID_TRANSACTION_TIMEOUT.

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/txn"
)

// producerIDBlock is how many ids one metastore allocation reserves.
const producerIDBlock = 1000

// producerIDs hands out producer ids from blocks reserved in the metastore.
type producerIDs struct {
	meta *metastore.Store
	mu   sync.Mutex
	next int64 // next id to hand out; valid below end
	end  int64
	// base is added to every id: in cluster mode the broker id << 40, as
	// each broker allocates from its own metastore.
	base int64
}

// allocate returns a producer id never returned before.
func (a *producerIDs) allocate() (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next >= a.end {
		start, err := a.meta.AllocateProducerIDs(producerIDBlock)
		if err != nil {
			return -1, fmt.Errorf("server: allocate producer ids: %w", err)
		}
		a.next, a.end = start, start+producerIDBlock
	}
	id := a.next
	a.next++
	return a.base + id, nil
}

func handleInitProducerID(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.InitProducerIDRequest)
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if r.TransactionalID != nil {
		initTransactional(s, rc, r, resp)
		return kresp(resp), nil
	}
	if !s.az.allowedCluster(rc, acl.OpIdempotentWrite) && !s.az.mayWriteSomeTopic(rc) {
		resp.ErrorCode = errorCode(errClusterAuthorization)
		return kresp(resp), nil
	}
	id, err := s.pids.allocate()
	if err != nil {
		s.log.Error("server: init producer id", "err", err)
		resp.ErrorCode = errorCode(err)
		return kresp(resp), nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return kresp(resp), nil
}

// initTransactional answers InitProducerId for a transactional id.
func initTransactional(s *Server, rc *reqCtx, r *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) {
	id := *r.TransactionalID
	if !s.az.allowedTxnID(rc, acl.OpWrite, id) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return
	}
	var expected *txn.ProducerIDEpoch
	if r.Version >= 3 && (r.ProducerID != -1 || r.ProducerEpoch != -1) {
		if r.ProducerID == -1 || r.ProducerEpoch == -1 {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return
		}
		expected = &txn.ProducerIDEpoch{ID: r.ProducerID, Epoch: r.ProducerEpoch}
	}
	ctx := context.Background()
	if rc.conn != nil {
		ctx = rc.conn.ctx
	}
	if id != "" {
		s.txnCoordReady(ctx)
	}
	pe, err := s.txn.InitProducerID(ctx, id, r.TransactionTimeoutMillis, expected)
	if resp.ErrorCode = txnErrorCode(err, 4, r.Version); resp.ErrorCode != 0 {
		if resp.ErrorCode == kerr.UnknownServerError.Code {
			s.log.Error("server: init transactional producer", "transactional_id", id, "err", err)
		}
		return
	}
	resp.ProducerID, resp.ProducerEpoch = pe.ID, pe.Epoch
}
