package server

// FindCoordinator (key 10), versions as the group coordinator serves them
// (0-4): the server routes by key type before the group coordinator sees
// the request.
//
//	key type 0 (group, and every v0 request): handleGroup (groups.go);
//	  Describe on each group (authorizeFindGroupCoordinator)
//	key type 1 (transaction, v1+): the leader of the transactional id's
//	  __transaction_state partition, PartitionFor(id, partitions)
//	key type 2 (share, v4+, with group.share.enable): the share
//	  coordinator of "group:topicId:partition" (handleFindShareCoordinator)
//
// For a transactional id, as Kafka's KafkaApis.getCoordinator: Describe on
// the TransactionalId is required (TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
// checked first; each v4 key is answered on its own;
// a cluster without __transaction_state gets it created and answers
// COORDINATOR_NOT_AVAILABLE until it has a leader, as does a partition
// without a live leader; an empty id is INVALID_REQUEST.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/coordlog"
	"github.com/sluice/sluice/metadata"
	"github.com/sluice/sluice/txn"
)

// coordinatorTypeTransaction is FindCoordinator's key type of a
// transactional id.
const coordinatorTypeTransaction = 1

func handleFindCoordinator(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.FindCoordinatorRequest)
	if r.Version >= 4 && r.CoordinatorType == coordinatorTypeShare && s.share.members != nil {
		return handleFindShareCoordinator(s, rc, r) // share_persister.go
	}
	if r.Version == 0 || r.CoordinatorType != coordinatorTypeTransaction {
		return handleGroup(s, rc, req)
	}
	resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := r.CoordinatorKeys
	if r.Version < 4 {
		keys = []string{r.CoordinatorKey}
	}
	ctx := context.Background()
	if rc.conn != nil {
		ctx = rc.conn.ctx
	}
	for _, key := range keys {
		b, code, msg := s.txnCoordinatorOf(ctx, rc, key)
		node, host, port := int32(-1), "", int32(-1)
		var m *string
		if code == 0 {
			node, host, port = b.ID, b.Host, b.Port
		} else {
			m = &msg
		}
		if r.Version >= 4 {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.ErrorCode, c.ErrorMessage, c.NodeID, c.Host, c.Port = key, code, m, node, host, port
			resp.Coordinators = append(resp.Coordinators, c)
			continue
		}
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = code, m, node, host, port
	}
	s.coordinatorAddrs(rc, resp)
	return kresp(resp), nil
}

// txnCoordinatorOf returns the live leader of transactional id's
// partition, or why there is none.
func (s *Server) txnCoordinatorOf(ctx context.Context, rc *reqCtx, id string) (metadata.Broker, int16, string) {
	if !s.az.allowedTxnID(rc, acl.OpDescribe, id) {
		return metadata.Broker{}, kerr.TransactionalIDAuthorizationFailed.Code, "not allowed to describe this transactional id"
	}
	if id == "" {
		return metadata.Broker{}, kerr.InvalidRequest.Code, "empty transactional id"
	}
	parts := s.md.partitions(txn.Topic)
	if len(parts) == 0 {
		if err := s.ensureTxnTopic(ctx); err != nil {
			s.log.Info("server: cannot create "+txn.Topic+" yet", "err", err)
			return metadata.Broker{}, kerr.CoordinatorNotAvailable.Code, txn.Topic + " cannot be created yet: " + err.Error()
		}
		if parts = s.md.partitions(txn.Topic); len(parts) == 0 {
			return metadata.Broker{}, kerr.CoordinatorNotAvailable.Code, txn.Topic + " is being created"
		}
	}
	leader := parts[coordlog.PartitionFor(id, int32(len(parts)))].Leader
	for _, b := range s.md.brokers() {
		if b.ID == leader {
			return b, 0, ""
		}
	}
	return metadata.Broker{}, kerr.CoordinatorNotAvailable.Code, "the transaction coordinator has no live leader"
}
