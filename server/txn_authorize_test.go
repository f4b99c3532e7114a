package server

import (
	"net/netip"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/config"
)

// denyTxn allows everything but the transactional id "denied", the topic
// "secret" and the group "g-denied".
type denyTxn struct{}

func (denyTxn) Authorize(_ string, _ netip.Addr, _ acl.Operation, rt acl.ResourceType, name string) bool {
	switch rt {
	case acl.ResourceTransactionalID:
		return name != "denied"
	case acl.ResourceTopic:
		return name != "secret"
	case acl.ResourceGroup:
		return name != "g-denied"
	}
	return true
}

// TestTxnAuthorization: the transaction APIs check the TransactionalId,
// topic and group resources as Kafka's KafkaApis does.
func TestTxnAuthorization(t *testing.T) {
	cfg := config.Default()
	cfg.TransactionStatePartitions = 1
	s := newTestServer(t, &cfg, Options{Authorizer: denyTxn{}})
	mustCreateTopics(t, s, "out", "secret")
	denied := kerr.TransactionalIDAuthorizationFailed.Code

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKey = 1, "denied"
	if c := mustCall(t, s, 3, fc).(*kmsg.FindCoordinatorResponse).ErrorCode; c != denied {
		t.Errorf("find coordinator: %s", code(c))
	}
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr("denied"), 1000
	if c := mustCall(t, s, 4, ip).(*kmsg.InitProducerIDResponse).ErrorCode; c != denied {
		t.Errorf("init: %s", code(c))
	}
	ap := kmsg.NewPtrAddPartitionsToTxnRequest()
	ap.TransactionalID = "denied"
	for _, topic := range []string{"out", "secret"} {
		at := kmsg.NewAddPartitionsToTxnRequestTopic()
		at.Topic, at.Partitions = topic, []int32{0}
		ap.Topics = append(ap.Topics, at)
	}
	for _, rt := range mustCall(t, s, 3, ap).(*kmsg.AddPartitionsToTxnResponse).Topics {
		if c := rt.Partitions[0].ErrorCode; c != denied {
			t.Errorf("add %s with a denied id: %s", rt.Topic, code(c))
		}
	}
	ap.TransactionalID = "ok"
	want := map[string]int16{"out": kerr.OperationNotAttempted.Code, "secret": kerr.TopicAuthorizationFailed.Code}
	for _, rt := range mustCall(t, s, 3, ap).(*kmsg.AddPartitionsToTxnResponse).Topics {
		if c := rt.Partitions[0].ErrorCode; c != want[rt.Topic] {
			t.Errorf("add %s: %s, want %s", rt.Topic, code(c), code(want[rt.Topic]))
		}
	}
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.Group = "denied", "g"
	if c := mustCall(t, s, 3, ao).(*kmsg.AddOffsetsToTxnResponse).ErrorCode; c != denied {
		t.Errorf("add offsets with a denied id: %s", code(c))
	}
	ao.TransactionalID, ao.Group = "ok", "g-denied"
	if c := mustCall(t, s, 3, ao).(*kmsg.AddOffsetsToTxnResponse).ErrorCode; c != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("add offsets of a denied group: %s", code(c))
	}
	et := kmsg.NewPtrEndTxnRequest()
	et.TransactionalID = "denied"
	if c := mustCall(t, s, 3, et).(*kmsg.EndTxnResponse).ErrorCode; c != denied {
		t.Errorf("end: %s", code(c))
	}
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{"denied"}
	if c := mustCall(t, s, 0, dt).(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode; c != denied {
		t.Errorf("describe: %s", code(c))
	}
}
