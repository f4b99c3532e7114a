package main

// `sluice acl`, after kafka-acls.sh: it adds, lists and removes ACL
// bindings through CreateAcls, DescribeAcls and DeleteAcls, with
// kafka-acls.sh's options and its output ("Current ACLs for resource
// `ResourcePattern(...)`:" then one "(principal=..., ...)" line per entry).
//
// The requests are built from kmsg directly rather than with kadm's
// ACLBuilder, whose defaulting rules differ from kafka-acls.sh's.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func aclCmd(args []string, stdout, stderr io.Writer) int {
	return runSubcommand("acl", []subcommand{
		{"add", "(--allow-principal P | --deny-principal P)... [--allow-host H] [--deny-host H] [--operation OP]... RESOURCE... [--resource-pattern-type LITERAL|PREFIXED]",
			"add ACL bindings (CreateAcls)", aclAdd},
		{"list", "[--principal P]... [RESOURCE...] [--resource-pattern-type ANY|MATCH|LITERAL|PREFIXED]",
			"list ACL bindings by resource (DescribeAcls)", aclList},
		{"remove", "RESOURCE... [--allow-principal P | --deny-principal P]... [--allow-host H] [--deny-host H] [--operation OP]... [--resource-pattern-type ...]",
			"remove the ACL bindings that match (DeleteAcls)", aclRemove},
	}, args, stdout, stderr)
}

// clusterResourceName is the name of the one cluster resource, as Kafka's
// tools send it.
const clusterResourceName = "kafka-cluster"

// aclFlags are kafka-acls.sh's options, registered on an adminCmd's flags.
// RESOURCE in the synopses is --topic T, --group G, --cluster or
// --transactional-id ID, each repeatable.
type aclFlags struct {
	allowPrincipals, denyPrincipals stringList
	allowHosts, denyHosts           stringList
	operations                      stringList
	topics, groups, txnIDs          stringList
	cluster                         bool
	patternType                     string
	principals                      stringList // list only
}

// register adds the flags every acl subcommand takes; principals adds
// --allow/deny-principal and the host and operation flags (add, remove)
// rather than list's --principal.
func (f *aclFlags) register(c *adminCmd, principals bool, defaultPattern string) {
	fs := c.flags
	if principals {
		fs.Var(&f.allowPrincipals, "allow-principal", "principal `Type:name` (User:alice) the entries allow (repeatable)")
		fs.Var(&f.denyPrincipals, "deny-principal", "principal `Type:name` the entries deny (repeatable)")
		fs.Var(&f.allowHosts, "allow-host", "`host` (IP address) the allow entries apply to, * for any (repeatable; add: default *)")
		fs.Var(&f.denyHosts, "deny-host", "`host` the deny entries apply to (repeatable; add: default *)")
		fs.Var(&f.operations, "operation", "`operation`: Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite or All (repeatable; add: default All)")
	} else {
		fs.Var(&f.principals, "principal", "only entries of principal `Type:name` (repeatable)")
	}
	fs.Var(&f.topics, "topic", "topic `name` (with PREFIXED: a prefix; * is every topic) (repeatable)")
	fs.Var(&f.groups, "group", "consumer group `id` (repeatable)")
	fs.Var(&f.txnIDs, "transactional-id", "transactional `id` (repeatable)")
	fs.BoolVar(&f.cluster, "cluster", false, "the cluster resource")
	fs.StringVar(&f.patternType, "resource-pattern-type", defaultPattern, "how resource names match: LITERAL, PREFIXED (list, remove: also MATCH, ANY)")
}

// aclResource is one resource pattern named on the command line.
type aclResource struct {
	typ  kmsg.ACLResourceType
	name string
}

// resources are the resources the flags name, topics first.
func (f *aclFlags) resources() []aclResource {
	var rs []aclResource
	for _, t := range f.topics {
		rs = append(rs, aclResource{kmsg.ACLResourceTypeTopic, t})
	}
	for _, g := range f.groups {
		rs = append(rs, aclResource{kmsg.ACLResourceTypeGroup, g})
	}
	if f.cluster {
		rs = append(rs, aclResource{kmsg.ACLResourceTypeCluster, clusterResourceName})
	}
	for _, id := range f.txnIDs {
		rs = append(rs, aclResource{kmsg.ACLResourceTypeTransactionalId, id})
	}
	return rs
}

// pattern parses --resource-pattern-type; filter allows MATCH and ANY.
func (f *aclFlags) pattern(filter bool) (kmsg.ACLResourcePatternType, error) {
	pt, err := kmsg.ParseACLResourcePatternType(f.patternType)
	switch {
	case err != nil:
		return 0, usageErr("--resource-pattern-type %q: want LITERAL, PREFIXED, MATCH or ANY", f.patternType)
	case !filter && pt != kmsg.ACLResourcePatternTypeLiteral && pt != kmsg.ACLResourcePatternTypePrefixed:
		return 0, usageErr("--resource-pattern-type %s: adding takes LITERAL or PREFIXED", pt)
	}
	return pt, nil
}

// supportedOps are the operations each resource type has, as Kafka's
// AclEntry.supportedOperations lists them; an ACL naming another is
// refused before anything is sent.
var supportedOps = map[kmsg.ACLResourceType][]kmsg.ACLOperation{
	kmsg.ACLResourceTypeTopic: {kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate,
		kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationAll},
	kmsg.ACLResourceTypeGroup: {kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete, kmsg.ACLOperationAll},
	kmsg.ACLResourceTypeCluster: {kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite,
		kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe, kmsg.ACLOperationAll},
	kmsg.ACLResourceTypeTransactionalId: {kmsg.ACLOperationDescribe, kmsg.ACLOperationWrite, kmsg.ACLOperationAll},
}

// ops parses --operation; none gives def.
func (f *aclFlags) ops(def kmsg.ACLOperation) ([]kmsg.ACLOperation, error) {
	if len(f.operations) == 0 {
		return []kmsg.ACLOperation{def}, nil
	}
	var ops []kmsg.ACLOperation
	for _, s := range f.operations {
		op, err := kmsg.ParseACLOperation(s)
		if err != nil || op == kmsg.ACLOperationAny || op == kmsg.ACLOperationUnknown {
			return nil, usageErr("--operation %q: want Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite or All", s)
		}
		if !slices.Contains(ops, op) {
			ops = append(ops, op)
		}
	}
	return ops, nil
}

// checkPrincipal checks the Type:name form of a principal (KafkaPrincipal).
func checkPrincipal(flagName, p string) error {
	typ, name, ok := strings.Cut(p, ":")
	if !ok || typ == "" || name == "" {
		return usageErr("%s %q: want Type:name, such as User:alice", flagName, p)
	}
	return nil
}

// aclEntry is the principal, host, operation and permission of a binding;
// in a filter, "" principal or host and ANY operation or permission match
// anything.
type aclEntry struct {
	principal, host string
	op              kmsg.ACLOperation
	perm            kmsg.ACLPermissionType
}

// entries crosses the principals with their hosts and ops, allow entries
// first. anyHost is the host of entries whose --allow-host/--deny-host is
// not given.
func (f *aclFlags) entries(ops []kmsg.ACLOperation, anyHost string) ([]aclEntry, error) {
	var es []aclEntry
	add := func(flagName string, principals, hosts stringList, perm kmsg.ACLPermissionType) error {
		if len(hosts) == 0 {
			hosts = stringList{anyHost}
		}
		for _, p := range principals {
			if err := checkPrincipal(flagName, p); err != nil {
				return err
			}
			for _, h := range hosts {
				for _, op := range ops {
					es = append(es, aclEntry{p, h, op, perm})
				}
			}
		}
		return nil
	}
	if err := add("--allow-principal", f.allowPrincipals, f.allowHosts, kmsg.ACLPermissionTypeAllow); err != nil {
		return nil, err
	}
	if err := add("--deny-principal", f.denyPrincipals, f.denyHosts, kmsg.ACLPermissionTypeDeny); err != nil {
		return nil, err
	}
	if len(f.allowHosts) > 0 && len(f.allowPrincipals) == 0 || len(f.denyHosts) > 0 && len(f.denyPrincipals) == 0 {
		return nil, usageErr("--allow-host and --deny-host need --allow-principal and --deny-principal")
	}
	return es, nil
}

// removeEntries are the entry filters of acl remove, for operations ops
// (ANY when --operation is not given). Unlike kafka-acls.sh, a host or
// operation not given matches any rather than only * and All: "remove
// alice's ACLs on orders" removes them all. Without a principal, there is
// one filter per operation matching every principal, host and permission:
// --operation Read alone removes only the Read entries.
func (f *aclFlags) removeEntries(ops []kmsg.ACLOperation) ([]aclEntry, error) {
	entries, err := f.entries(ops, "")
	if err != nil || len(entries) > 0 {
		return entries, err
	}
	for _, op := range ops {
		entries = append(entries, aclEntry{op: op, perm: kmsg.ACLPermissionTypeAny})
	}
	return entries, nil
}

// aclBinding is one ACL as the broker reports it.
type aclBinding struct {
	resType kmsg.ACLResourceType
	name    string
	pattern kmsg.ACLResourcePatternType
	aclEntry
}

// resourceString is Kafka's ResourcePattern.toString, which kafka-acls.sh
// prints.
func (b aclBinding) resourceString() string {
	return fmt.Sprintf("ResourcePattern(resourceType=%s, name=%s, patternType=%s)", b.resType, b.name, b.pattern)
}

// entryString is Kafka's AccessControlEntry.toString.
func (e aclEntry) entryString() string {
	return fmt.Sprintf("(principal=%s, host=%s, operation=%s, permissionType=%s)", e.principal, e.host, e.op, e.perm)
}

// printBindings writes bindings grouped by resource, in a stable order, as
// kafka-acls.sh does: a line "<verb> for resource `ResourcePattern(...)`:"
// then one tab-indented entry per line, and a blank line after each
// resource.
func printBindings(w io.Writer, verb string, bs []aclBinding) {
	slices.SortFunc(bs, func(a, b aclBinding) int {
		return cmp.Or(cmp.Compare(a.resType, b.resType), cmp.Compare(a.name, b.name), cmp.Compare(a.pattern, b.pattern),
			cmp.Compare(a.principal, b.principal), cmp.Compare(a.host, b.host),
			cmp.Compare(a.op, b.op), cmp.Compare(a.perm, b.perm))
	})
	for i, b := range bs {
		if i == 0 || b.resourceString() != bs[i-1].resourceString() {
			if i > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "%s for resource `%s`:\n", verb, b.resourceString())
		}
		fmt.Fprintf(w, "\t%s\n", b.entryString())
	}
	if len(bs) > 0 {
		fmt.Fprintln(w)
	}
}

func aclAdd(c *adminCmd) error {
	var f aclFlags
	f.register(c, true, "LITERAL")
	if _, err := c.parse(noArgs); err != nil {
		return err
	}
	pt, err := f.pattern(false)
	if err != nil {
		return err
	}
	ops, err := f.ops(kmsg.ACLOperationAll)
	if err != nil {
		return err
	}
	entries, err := f.entries(ops, "*")
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return usageErr("name at least one --allow-principal or --deny-principal")
	}
	resources := f.resources()
	if len(resources) == 0 {
		return usageErr("name a resource: --topic, --group, --cluster or --transactional-id")
	}
	var bs []aclBinding
	for _, r := range resources {
		for _, e := range entries {
			if !slices.Contains(supportedOps[r.typ], e.op) {
				return usageErr("resource type %s does not take operation %s", r.typ, e.op)
			}
			bs = append(bs, aclBinding{r.typ, r.name, pt, e})
		}
	}
	return c.connect(func(_ *kadm.Client, ctx context.Context) error {
		req := kmsg.NewPtrCreateACLsRequest()
		for _, b := range bs {
			cr := kmsg.NewCreateACLsRequestCreation()
			cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = b.resType, b.name, b.pattern
			cr.Principal, cr.Host, cr.Operation, cr.PermissionType = b.principal, b.host, b.op, b.perm
			req.Creations = append(req.Creations, cr)
		}
		resp, err := req.RequestWith(ctx, c.client())
		if err != nil {
			return c.brokerErr("create ACLs", err)
		}
		if len(resp.Results) != len(bs) {
			return fmt.Errorf("create ACLs: %d results for %d ACLs", len(resp.Results), len(bs))
		}
		var added []aclBinding
		var failed failures
		for i, r := range resp.Results {
			if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
				failed.add("%s %s: %s", bs[i].resourceString(), bs[i].entryString(), errText(err, deref(r.ErrorMessage)))
				continue
			}
			added = append(added, bs[i])
		}
		printBindings(c.stdout, "Adding ACLs", added)
		return failed.err()
	})
}

func aclList(c *adminCmd) error {
	var f aclFlags
	f.register(c, false, "ANY")
	if _, err := c.parse(noArgs); err != nil {
		return err
	}
	pt, err := f.pattern(true)
	if err != nil {
		return err
	}
	for _, p := range f.principals {
		if err := checkPrincipal("--principal", p); err != nil {
			return err
		}
	}
	// One DescribeAcls per resource and principal named; none named is
	// every resource, every principal.
	resources := f.resources()
	if len(resources) == 0 {
		resources = []aclResource{{typ: kmsg.ACLResourceTypeAny}}
	}
	principals := []*string{nil}
	if len(f.principals) > 0 {
		principals = principals[:0]
		for _, p := range f.principals {
			principals = append(principals, &p)
		}
	}
	return c.connect(func(_ *kadm.Client, ctx context.Context) error {
		var bs []aclBinding
		seen := map[aclBinding]bool{}
		for _, r := range resources {
			for _, p := range principals {
				req := kmsg.NewPtrDescribeACLsRequest()
				req.ResourceType, req.ResourcePatternType = r.typ, pt
				if r.typ != kmsg.ACLResourceTypeAny {
					req.ResourceName = &r.name
				}
				req.Principal = p
				req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
				resp, err := req.RequestWith(ctx, c.client())
				if err != nil {
					return c.brokerErr("describe ACLs", err)
				}
				if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
					return fmt.Errorf("describe ACLs: %s", errText(err, deref(resp.ErrorMessage)))
				}
				for _, res := range resp.Resources {
					for _, a := range res.ACLs {
						b := aclBinding{res.ResourceType, res.ResourceName, res.ResourcePatternType,
							aclEntry{a.Principal, a.Host, a.Operation, a.PermissionType}}
						if !seen[b] {
							seen[b] = true
							bs = append(bs, b)
						}
					}
				}
			}
		}
		printBindings(c.stdout, "Current ACLs", bs)
		return nil
	})
}

func aclRemove(c *adminCmd) error {
	var f aclFlags
	f.register(c, true, "LITERAL")
	c.flags.Bool("force", false, "accepted for kafka-acls.sh compatibility; sluice never asks")
	if _, err := c.parse(noArgs); err != nil {
		return err
	}
	pt, err := f.pattern(true)
	if err != nil {
		return err
	}
	ops, err := f.ops(kmsg.ACLOperationAny)
	if err != nil {
		return err
	}
	entries, err := f.removeEntries(ops)
	if err != nil {
		return err
	}
	resources := f.resources()
	if len(resources) == 0 {
		return usageErr("name a resource: --topic, --group, --cluster or --transactional-id")
	}
	return c.connect(func(_ *kadm.Client, ctx context.Context) error {
		req := kmsg.NewPtrDeleteACLsRequest()
		for _, r := range resources {
			for _, e := range entries {
				fl := kmsg.NewDeleteACLsRequestFilter()
				fl.ResourceType, fl.ResourceName, fl.ResourcePatternType = r.typ, &r.name, pt
				fl.Principal, fl.Host = nilIfEmpty(e.principal), nilIfEmpty(e.host)
				fl.Operation, fl.PermissionType = e.op, e.perm
				req.Filters = append(req.Filters, fl)
			}
		}
		resp, err := req.RequestWith(ctx, c.client())
		if err != nil {
			return c.brokerErr("delete ACLs", err)
		}
		var removed []aclBinding
		var failed failures
		seen := map[aclBinding]bool{}
		for _, r := range resp.Results {
			if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
				failed.add("%s", errText(err, deref(r.ErrorMessage)))
				continue
			}
			for _, m := range r.MatchingACLs {
				b := aclBinding{m.ResourceType, m.ResourceName, m.ResourcePatternType,
					aclEntry{m.Principal, m.Host, m.Operation, m.PermissionType}}
				if err := kerr.ErrorForCode(m.ErrorCode); err != nil {
					failed.add("%s %s: %s", b.resourceString(), b.entryString(), errText(err, deref(m.ErrorMessage)))
					continue
				}
				if !seen[b] {
					seen[b] = true
					removed = append(removed, b)
				}
			}
		}
		if len(removed) == 0 && len(failed) == 0 {
			fmt.Fprintln(c.stdout, "No ACLs matched.")
		}
		printBindings(c.stdout, "Removed ACLs", removed)
		if err := failed.err(); err != nil {
			return errors.New("delete ACLs: " + err.Error())
		}
		return nil
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
