// Package acl is Kafka's authorization model: ACL bindings (a resource
// pattern and an access control entry), the filters of DescribeAcls and
// DeleteAcls, an Authorizer that decides (principal, host, operation,
// resource) over an in-memory ACL cache without locking or allocating, and
// the Store interface behind which ACLs persist (the metastore on a single
// node, ZooKeeper in Kafka's layout in cluster mode).
//
// The rules are those of Kafka's AclAuthorizer (ZooKeeper mode) and
// StandardAuthorizer (KRaft), which agree on them:
//
//   - a principal listed in super.users is allowed everything;
//   - the ACLs that apply to a resource are those on the LITERAL pattern with
//     its exact name, on the LITERAL wildcard "*" of its type, and on every
//     PREFIXED pattern of its type whose name is a prefix of the resource's;
//   - when none applies (to any principal), the answer is
//     allow.everyone.if.no.acl.found (default false);
//   - an entry applies to a request when its principal is the request's or
//     "User:*", its host is the client's IP or "*", and its operation is the
//     requested one or All; a matching Deny wins over every Allow;
//   - an Allow of Read, Write, Delete or Alter also allows Describe, and an
//     Allow of AlterConfigs also allows DescribeConfigs (Deny implies
//     nothing but itself; Deny All denies everything).
//
// Numeric codes of every enum are Kafka's wire codes (kmsg.ACLResourceType,
// ACLResourcePatternType, ACLOperation, ACLPermissionType), so a handler
// converts with a plain type conversion. Names are Kafka's: the PascalCase
// of SecurityUtils ("Topic", "TransactionalId", "IdempotentWrite", "Allow")
// and the enum names of PatternType ("LITERAL", "PREFIXED").
package acl

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid marks a binding, filter or setting this package refuses. The
// error wrapping it says which field and why.
var ErrInvalid = errors.New("acl: invalid")

// Well-known names.
const (
	// WildcardResource as the name of a LITERAL pattern matches every
	// resource of its type.
	WildcardResource = "*"
	// WildcardPrincipal as an entry's principal matches every principal.
	WildcardPrincipal = "User:*"
	// WildcardHost as an entry's host matches every client address.
	WildcardHost = "*"
	// ClusterName is the name of the one Cluster resource.
	ClusterName = "kafka-cluster"
)

// ResourceType is the kind of a resource. Codes are Kafka's.
type ResourceType int8

// Resource types. Any and Unknown appear only in filters and errors.
const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7

	numResourceTypes = 8
)

var resourceTypeNames = [numResourceTypes]string{"Unknown", "Any", "Topic", "Group", "Cluster",
	"TransactionalId", "DelegationToken", "User"}

// String is Kafka's name of t ("Topic", "TransactionalId"), as used in
// ZooKeeper paths and by kafka-acls.sh.
func (t ResourceType) String() string {
	if t >= 0 && t < numResourceTypes {
		return resourceTypeNames[t]
	}
	return fmt.Sprintf("ResourceType(%d)", int8(t))
}

// Concrete reports whether t names real resources (not Any or Unknown).
func (t ResourceType) Concrete() bool { return t >= ResourceTopic && t < numResourceTypes }

// ParseResourceType parses a resource type name the way Kafka does:
// case-insensitively, with or without underscores ("Topic", "TOPIC",
// "TRANSACTIONAL_ID", "transactionalid"). ok is false for anything else.
func ParseResourceType(s string) (ResourceType, bool) {
	i, ok := parseName(resourceTypeNames[:], s)
	return ResourceType(i), ok
}

// PatternType says how a pattern's name matches resource names.
type PatternType int8

// Pattern types. Literal and Prefixed are stored; Any and Match appear
// only in filters.
const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1
	PatternMatch    PatternType = 2
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4

	numPatternTypes = 5
)

var patternTypeNames = [numPatternTypes]string{"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"}

// String is Kafka's name of p: "LITERAL", "PREFIXED", "ANY", "MATCH".
func (p PatternType) String() string {
	if p >= 0 && p < numPatternTypes {
		return patternTypeNames[p]
	}
	return fmt.Sprintf("PatternType(%d)", int8(p))
}

// Specific reports whether p is a pattern type a binding can have
// (Literal or Prefixed).
func (p PatternType) Specific() bool { return p == PatternLiteral || p == PatternPrefixed }

// ParsePatternType parses "LITERAL", "prefixed", "Match", ... (any case).
func ParsePatternType(s string) (PatternType, bool) {
	i, ok := parseName(patternTypeNames[:], s)
	return PatternType(i), ok
}

// Operation is what a request does to a resource. Codes are Kafka's.
type Operation int8

// Operations. Any and Unknown appear only in filters.
const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14

	numOperations = 15
)

var operationNames = [numOperations]string{"Unknown", "Any", "All", "Read", "Write", "Create",
	"Delete", "Alter", "Describe", "ClusterAction", "DescribeConfigs", "AlterConfigs",
	"IdempotentWrite", "CreateTokens", "DescribeTokens"}

// String is Kafka's name of o ("Read", "IdempotentWrite").
func (o Operation) String() string {
	if o >= 0 && o < numOperations {
		return operationNames[o]
	}
	return fmt.Sprintf("Operation(%d)", int8(o))
}

// ParseOperation parses an operation name the way Kafka does
// (case-insensitive, underscores optional: "IdempotentWrite",
// "IDEMPOTENT_WRITE", "idempotentwrite").
func ParseOperation(s string) (Operation, bool) {
	i, ok := parseName(operationNames[:], s)
	return Operation(i), ok
}

// opMask is a set of operations, bit o for Operation o.
type opMask uint32

const allOps opMask = (1<<numOperations - 1) &^ (1<<OpUnknown | 1<<OpAny | 1<<OpAll)

// grants is the set of operations an entry with operation o and
// permission perm decides. Allow implies Describe from Read, Write, Delete
// and Alter, and DescribeConfigs from AlterConfigs; Deny implies nothing;
// All covers every operation either way. Unknown or Any decide nothing.
func grants(o Operation, perm Permission) opMask {
	switch {
	case o == OpAll:
		return allOps
	case o <= OpAny || o >= numOperations:
		return 0
	case perm != PermissionAllow:
		return 1 << o
	}
	switch o {
	case OpRead, OpWrite, OpDelete, OpAlter:
		return 1<<o | 1<<OpDescribe
	case OpAlterConfigs:
		return 1<<o | 1<<OpDescribeConfigs
	}
	return 1 << o
}

// Implies reports whether an Allow of o also allows target (Kafka's ACL
// inheritance: All implies everything, Read/Write/Delete/Alter imply
// Describe, AlterConfigs implies DescribeConfigs, every operation itself).
func (o Operation) Implies(target Operation) bool {
	return target > OpAll && target < numOperations && grants(o, PermissionAllow)&(1<<target) != 0
}

// SupportedOperations lists the operations that mean something on
// resources of type t (Kafka's AclEntry.supportedOperations; what the
// authorized-operations fields report), nil for a
// type that is not concrete. The caller owns the returned slice.
func SupportedOperations(t ResourceType) []Operation {
	switch t {
	case ResourceTopic:
		return []Operation{OpRead, OpWrite, OpCreate, OpDescribe, OpDelete, OpAlter, OpDescribeConfigs, OpAlterConfigs}
	case ResourceGroup:
		// Kafka 3.9's list: Kafka 4 adds DescribeConfigs and AlterConfigs
		// with group configs (KIP-848), which Sluice does not serve yet.
		return []Operation{OpRead, OpDescribe, OpDelete}
	case ResourceCluster:
		return []Operation{OpCreate, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite, OpAlter, OpDescribe}
	case ResourceTransactionalID:
		return []Operation{OpDescribe, OpWrite}
	case ResourceDelegationToken:
		return []Operation{OpDescribe}
	case ResourceUser:
		return []Operation{OpCreateTokens, OpDescribeTokens}
	}
	return nil
}

// Permission is whether an entry allows or denies. Codes are Kafka's.
type Permission int8

// Permissions. Any and Unknown appear only in filters.
const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1
	PermissionDeny    Permission = 2
	PermissionAllow   Permission = 3

	numPermissions = 4
)

var permissionNames = [numPermissions]string{"Unknown", "Any", "Deny", "Allow"}

// String is Kafka's name of p: "Allow", "Deny".
func (p Permission) String() string {
	if p >= 0 && p < numPermissions {
		return permissionNames[p]
	}
	return fmt.Sprintf("Permission(%d)", int8(p))
}

// ParsePermission parses "Allow", "DENY", ... (any case).
func ParsePermission(s string) (Permission, bool) {
	i, ok := parseName(permissionNames[:], s)
	return Permission(i), ok
}

// parseName returns the index of the name in names equal to s ignoring
// case and underscores (Kafka accepts "TransactionalId", "TRANSACTIONALID"
// and the Java enum name "TRANSACTIONAL_ID"). Index 0 (Unknown) never
// matches.
func parseName(names []string, s string) (int, bool) {
	if strings.Contains(s, "_") {
		s = strings.ReplaceAll(s, "_", "")
	}
	for i := 1; i < len(names); i++ {
		if strings.EqualFold(names[i], s) {
			return i, true
		}
	}
	return 0, false
}

// ResourcePattern is what a binding applies to: a LITERAL name ("*" for
// every resource of the type) or a PREFIXED name.
type ResourcePattern struct {
	Type        ResourceType
	Name        string
	PatternType PatternType
}

func (p ResourcePattern) String() string {
	return p.Type.String() + ":" + p.PatternType.String() + ":" + p.Name
}

// Validate checks that p can be stored: a concrete type, LITERAL or
// PREFIXED, and a non-empty name. An error wraps ErrInvalid.
func (p ResourcePattern) Validate() error {
	switch {
	case !p.Type.Concrete():
		return fmt.Errorf("%w: resource type %v", ErrInvalid, p.Type)
	case !p.PatternType.Specific():
		return fmt.Errorf("%w: pattern type %v", ErrInvalid, p.PatternType)
	case p.Name == "":
		return fmt.Errorf("%w: empty resource name", ErrInvalid)
	}
	return nil
}

// Entry is an access control entry: principal ("User:alice", or
// WildcardPrincipal) from host (an IP address, or WildcardHost) may or may
// not perform operation.
type Entry struct {
	Principal  string
	Host       string
	Operation  Operation
	Permission Permission
}

func (e Entry) String() string {
	return fmt.Sprintf("(principal=%s, host=%s, operation=%v, permissionType=%v)",
		e.Principal, e.Host, e.Operation, e.Permission)
}

// Validate checks that e can be stored: a principal of the form
// "Type:name", a non-empty host, a concrete operation (not Any or Unknown)
// and Allow or Deny. An error wraps ErrInvalid.
func (e Entry) Validate() error {
	switch {
	case !validPrincipal(e.Principal):
		return fmt.Errorf("%w: principal %q is not of the form Type:name", ErrInvalid, e.Principal)
	case e.Host == "":
		return fmt.Errorf("%w: empty host", ErrInvalid)
	case e.Operation <= OpAny || e.Operation >= numOperations:
		return fmt.Errorf("%w: operation %v", ErrInvalid, e.Operation)
	case e.Permission != PermissionAllow && e.Permission != PermissionDeny:
		return fmt.Errorf("%w: permission %v", ErrInvalid, e.Permission)
	}
	return nil
}

// validPrincipal reports whether s parses as Kafka's KafkaPrincipal
// ("Type:name"; SecurityUtils.parseKafkaPrincipal splits at the first ':').
func validPrincipal(s string) bool { return strings.IndexByte(s, ':') >= 0 }

// Binding is one ACL: an entry on a resource pattern.
type Binding struct {
	Pattern ResourcePattern
	Entry   Entry
}

func (b Binding) String() string { return b.Pattern.String() + " " + b.Entry.String() }

// Validate checks the pattern and the entry (see their Validate).
func (b Binding) Validate() error {
	if err := b.Pattern.Validate(); err != nil {
		return err
	}
	return b.Entry.Validate()
}

// ParseSuperUsers parses super.users: principals separated by ';' with
// optional spaces around each ("User:admin; User:broker"). An empty string
// is no super users. An entry without ':' is an error wrapping ErrInvalid.
func ParseSuperUsers(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ";") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !validPrincipal(p) {
			return nil, fmt.Errorf("%w: super.users entry %q is not of the form Type:name", ErrInvalid, p)
		}
		out = append(out, p)
	}
	return out, nil
}
