package server

// The ACL and SCRAM admin APIs with what a client should not send: bad
// bindings and filters, an unknown SCRAM mechanism, too few iterations, a
// user that does not exist, and the requests without an authorizer.

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/auth/sasl"
)

func TestACLRequestsRefuseBadInput(t *testing.T) {
	s := newTestServer(t, nil, Options{ClusterID: "acl", ACLs: acl.NewMemStore(), Authorizer: acl.New(acl.Config{})})
	s.az.authz = nil // the checks below are the requests' own, not authorization
	create := func(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) int16 {
		req := kmsg.NewPtrCreateACLsRequest()
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = rt, name, pt
		c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", op, perm
		req.Creations = append(req.Creations, c)
		return mustCall(t, s, 3, req).(*kmsg.CreateACLsResponse).Results[0].ErrorCode
	}
	lit, topic := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourceTypeTopic
	for _, tc := range []struct {
		name string
		code int16
	}{
		{"resource type any", create(kmsg.ACLResourceTypeAny, "t", lit, "User:a", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow)},
		{"pattern type match", create(topic, "t", kmsg.ACLResourcePatternTypeMatch, "User:a", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow)},
		{"operation any", create(topic, "t", lit, "User:a", kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAllow)},
		{"principal without type", create(topic, "t", lit, "alice", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow)},
		{"empty name", create(topic, "", lit, "User:a", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow)},
		{"unknown operation code", create(topic, "t", lit, "User:a", kmsg.ACLOperation(99), kmsg.ACLPermissionTypeAllow)},
	} {
		if tc.code != kerr.InvalidRequest.Code {
			t.Errorf("CreateAcls %s: %v, want INVALID_REQUEST", tc.name, kerr.ErrorForCode(tc.code))
		}
	}
	if all, _ := s.az.acls.All(t.Context()); len(all) != 0 {
		t.Fatalf("bad bindings stored: %v", all)
	}
	// A filter that is not one (a specific pattern type with resource type
	// unknown) is refused too.
	dreq := kmsg.NewPtrDescribeACLsRequest()
	dreq.ResourceType, dreq.ResourcePatternType = kmsg.ACLResourceType(0), kmsg.ACLResourcePatternTypeLiteral
	dreq.Operation, dreq.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	if c := mustCall(t, s, 3, dreq).(*kmsg.DescribeACLsResponse).ErrorCode; c != kerr.InvalidRequest.Code {
		t.Errorf("DescribeAcls with an unknown resource type: %v", kerr.ErrorForCode(c))
	}

	// Without an authorizer the ACL requests are SECURITY_DISABLED.
	off := newTestServer(t, nil, Options{ClusterID: "off"})
	if c := mustCall(t, off, 3, dreq).(*kmsg.DescribeACLsResponse).ErrorCode; c != kerr.SecurityDisabled.Code {
		t.Errorf("DescribeAcls without an authorizer: %v", kerr.ErrorForCode(c))
	}
}

func TestSCRAMRequestsRefuseBadInput(t *testing.T) {
	s := newTestServer(t, nil, Options{ClusterID: "scram", Credentials: &sasl.MemoryStore{}})
	alter := func(del []kmsg.AlterUserSCRAMCredentialsRequestDeletion, up []kmsg.AlterUserSCRAMCredentialsRequestUpsertion) []kmsg.AlterUserSCRAMCredentialsResponseResult {
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		req.Deletions, req.Upsertions = del, up
		return mustCall(t, s, 0, req).(*kmsg.AlterUserSCRAMCredentialsResponse).Results
	}
	up := func(user string, mech int8, iters int32, salted []byte) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = user, mech, iters, []byte("salt-salt-salt-salt"), salted
		return u
	}
	good := make([]byte, 64)
	for _, tc := range []struct {
		name string
		u    kmsg.AlterUserSCRAMCredentialsRequestUpsertion
		want int16
	}{
		{"unknown mechanism", up("a", 9, 4096, good), kerr.UnsupportedSaslMechanism.Code},
		{"too few iterations", up("b", 2, 100, good), kerr.UnacceptableCredential.Code},
		{"too many iterations", up("c", 2, 1<<30, good), kerr.UnacceptableCredential.Code},
		{"salted password of the wrong size", up("d", 2, 4096, []byte("short")), kerr.UnacceptableCredential.Code},
		{"ok", up("e", 2, 4096, good), 0},
	} {
		res := alter(nil, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{tc.u})
		if len(res) != 1 || res[0].ErrorCode != tc.want {
			t.Errorf("%s: %+v, want %v", tc.name, res, kerr.ErrorForCode(tc.want))
		}
	}
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = "nobody", 1
	if res := alter([]kmsg.AlterUserSCRAMCredentialsRequestDeletion{d}, nil); len(res) != 1 || res[0].ErrorCode != kerr.ResourceNotFound.Code {
		t.Errorf("delete an unknown user: %+v", res)
	}
	dreq := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
	u.Name = "nobody"
	dreq.Users = append(dreq.Users, u)
	if res := mustCall(t, s, 0, dreq).(*kmsg.DescribeUserSCRAMCredentialsResponse).Results; len(res) != 1 || res[0].ErrorCode != kerr.ResourceNotFound.Code {
		t.Errorf("describe an unknown user: %+v", res)
	}
}
