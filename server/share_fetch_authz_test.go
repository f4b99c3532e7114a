package server

// Authorization of ShareFetch and ShareAcknowledge, as Kafka's KafkaApis:
// Read on the group for the request, Read on each topic for its partitions.

import (
	"net/netip"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice/sluice/acl"
)

// denyRead refuses Read on the named group or topic, allows the rest.
type denyRead struct {
	rt   acl.ResourceType
	name string
}

func (d denyRead) Authorize(_ string, _ netip.Addr, op acl.Operation, rt acl.ResourceType, name string) bool {
	return !(op == acl.OpRead && rt == d.rt && name == d.name)
}

func TestShareAuthorization(t *testing.T) {
	t.Run("group", func(t *testing.T) {
		e := startShareServer(t, 1, nil, func(s *Server) { s.az.authz = denyRead{acl.ResourceGroup, "g"} })
		cl := e.client()
		if c := e.fetch(cl, sfetch{member: "a", max: 1}).ErrorCode; c != kerr.GroupAuthorizationFailed.Code {
			t.Fatalf("fetch: %v", kerr.ErrorForCode(c))
		}
		if c := e.ack(cl, "a", 1, ackBatch(0, 0, 1)).ErrorCode; c != kerr.GroupAuthorizationFailed.Code {
			t.Fatalf("ack: %v", kerr.ErrorForCode(c))
		}
	})
	t.Run("topic", func(t *testing.T) {
		e := startShareServer(t, 1, nil, func(s *Server) { s.az.authz = denyRead{acl.ResourceTopic, "sq"} })
		cl := e.client()
		resp := e.fetch(cl, sfetch{member: "a", max: 1})
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code ||
			len(resp.Topics[0].Partitions[0].AcquiredRecords) != 0 {
			t.Fatalf("fetch: %v %+v", kerr.ErrorForCode(resp.ErrorCode), resp.Topics)
		}
		r := e.ack(cl, "a", 1, ackBatch(0, 0, 1))
		if r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("ack: %v %+v", kerr.ErrorForCode(r.ErrorCode), r.Topics)
		}
	})
}
