package server

// CreateAcls (key 30, v0-v3), DescribeAcls (key 29, v0-v3) and DeleteAcls
// (key 31, v0-v3): the ACLs of package acl, stored in the metastore on a
// single node and in ZooKeeper's /kafka-acl in cluster mode (Options.ACLs).
//
//	v1: pattern types (LITERAL, PREFIXED; MATCH and ANY in filters)
//	v2: flexible
//	v3: the User resource type
//
// CreateAcls and DeleteAcls need Alter on the cluster, DescribeAcls
// Describe on it (CLUSTER_AUTHORIZATION_FAILED). A bad binding or filter is
// INVALID_REQUEST for that entry. Without an authorizer
// (authorizer.class.name unset) these requests are SECURITY_DISABLED, as in
// Kafka.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
)

// aclTimeout bounds a store operation (a ZooKeeper write in cluster mode).
const aclTimeout = 10 * time.Second

// errSecurityDisabled: ACL requests without an authorizer.
var errSecurityDisabled = errors.New("server: no authorizer is configured (authorizer.class.name)")

// aclsErr is the error of an ACL request as a whole, nil when it may go on.
func (a *authorizer) aclsErr(rc *reqCtx, op acl.Operation) error {
	switch {
	case a.acls == nil:
		return errSecurityDisabled
	case !a.allowedCluster(rc, op):
		return errClusterAuthorization
	}
	return nil
}

func patternType(v int16, p kmsg.ACLResourcePatternType) acl.PatternType {
	if v == 0 {
		return acl.PatternLiteral
	}
	return acl.PatternType(p)
}

func handleCreateAcls(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.CreateACLsRequest)
	resp := r.ResponseKind().(*kmsg.CreateACLsResponse)
	reqErr := s.az.aclsErr(rc, acl.OpAlter)
	var bindings []acl.Binding
	var idx []int
	for _, c := range r.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		b := acl.Binding{
			Pattern: acl.ResourcePattern{Type: acl.ResourceType(c.ResourceType), Name: c.ResourceName, PatternType: patternType(r.Version, c.ResourcePatternType)},
			Entry:   acl.Entry{Principal: c.Principal, Host: c.Host, Operation: acl.Operation(c.Operation), Permission: acl.Permission(c.PermissionType)},
		}
		err := reqErr
		if err == nil {
			if verr := b.Validate(); verr != nil {
				err = fmt.Errorf("%w: %v", errInvalidRequest, verr)
			}
		}
		if err != nil {
			res.ErrorCode, res.ErrorMessage = errorCode(err), errorMessage(err)
		} else {
			bindings = append(bindings, b)
			idx = append(idx, len(resp.Results))
		}
		resp.Results = append(resp.Results, res)
	}
	if len(bindings) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), aclTimeout)
		err := s.az.acls.Add(ctx, bindings)
		cancel()
		if err != nil {
			s.log.Error("server: create ACLs", "err", err)
			for _, i := range idx {
				resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = errorCode(err), errorMessage(err)
			}
		} else {
			s.log.Info("server: created ACLs", "count", len(bindings), "by", rc.principal())
		}
	}
	return kresp(resp), nil
}

// aclFilter converts a DescribeAcls or DeleteAcls filter.
func aclFilter(v int16, rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType, principal, host *string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) acl.Filter {
	ptype := acl.PatternType(pt)
	if v == 0 {
		ptype = acl.PatternLiteral
	}
	return acl.Filter{
		Pattern: acl.PatternFilter{Type: acl.ResourceType(rt), Name: name, PatternType: ptype},
		Entry:   acl.EntryFilter{Principal: principal, Host: host, Operation: acl.Operation(op), Permission: acl.Permission(perm)},
	}
}

func handleDescribeAcls(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.DescribeACLsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeACLsResponse)
	if err := s.az.aclsErr(rc, acl.OpDescribe); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return kresp(resp), nil
	}
	f := aclFilter(r.Version, r.ResourceType, r.ResourceName, r.ResourcePatternType, r.Principal, r.Host, r.Operation, r.PermissionType)
	if err := f.Validate(); err != nil {
		err = fmt.Errorf("%w: %v", errInvalidRequest, err)
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return kresp(resp), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), aclTimeout)
	all, err := s.az.acls.All(ctx)
	cancel()
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return kresp(resp), nil
	}
	byPattern := map[acl.ResourcePattern]int{}
	for _, b := range all {
		if !f.Matches(b) {
			continue
		}
		i, ok := byPattern[b.Pattern]
		if !ok {
			i = len(resp.Resources)
			byPattern[b.Pattern] = i
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName = kmsg.ACLResourceType(b.Pattern.Type), b.Pattern.Name
			res.ResourcePatternType = kmsg.ACLResourcePatternType(b.Pattern.PatternType)
			resp.Resources = append(resp.Resources, res)
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host = b.Entry.Principal, b.Entry.Host
		e.Operation, e.PermissionType = kmsg.ACLOperation(b.Entry.Operation), kmsg.ACLPermissionType(b.Entry.Permission)
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, e)
	}
	return kresp(resp), nil
}

func handleDeleteAcls(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.DeleteACLsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteACLsResponse)
	reqErr := s.az.aclsErr(rc, acl.OpAlter)
	for _, rf := range r.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		err := reqErr
		var removed []acl.Binding
		if err == nil {
			f := aclFilter(r.Version, rf.ResourceType, rf.ResourceName, rf.ResourcePatternType, rf.Principal, rf.Host, rf.Operation, rf.PermissionType)
			if verr := f.Validate(); verr != nil {
				err = fmt.Errorf("%w: %v", errInvalidRequest, verr)
			} else {
				ctx, cancel := context.WithTimeout(context.Background(), aclTimeout)
				removed, err = s.az.acls.Remove(ctx, f)
				cancel()
			}
		}
		if err != nil {
			res.ErrorCode, res.ErrorMessage = errorCode(err), errorMessage(err)
		}
		for _, b := range removed {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName = kmsg.ACLResourceType(b.Pattern.Type), b.Pattern.Name
			m.ResourcePatternType = kmsg.ACLResourcePatternType(b.Pattern.PatternType)
			m.Principal, m.Host = b.Entry.Principal, b.Entry.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(b.Entry.Operation), kmsg.ACLPermissionType(b.Entry.Permission)
			res.MatchingACLs = append(res.MatchingACLs, m)
		}
		resp.Results = append(resp.Results, res)
	}
	if reqErr == nil {
		s.log.Info("server: deleted ACLs", "filters", len(r.Filters), "by", rc.principal())
	}
	return kresp(resp), nil
}
