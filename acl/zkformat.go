package acl

// Kafka's ZooKeeper formats for ACLs (ZooKeeper mode; kafka.zk.ZkData,
// AclEntry). cluster.ACLStore writes them; they live here because they are
// pure encodings of this package's model and must be fuzzed and tested
// without a ZooKeeper. Part of Kafka's persistent format: do not change.
//
// A pattern's ACLs are one znode, /kafka-acl/<Type>/<name> for LITERAL and
// /kafka-acl-extended/prefixed/<Type>/<name> for PREFIXED (<Type> is
// ResourceType.String(): "Topic", "TransactionalId"), holding
//
//	{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}
//
// Kafka writes the acls as a set (no order, no duplicates) and reads
// permissionType and operation case-insensitively, underscores optional,
// turning a name it does not know into UNKNOWN (which never matches); a
// principal must be "Type:name"; version must be 1; empty data means no
// ACLs.
//
// A change to a pattern is announced by a persistent sequential znode
// (prefix acl_changes_): under /kafka-acl-changes for LITERAL patterns,
// holding "<TYPE>:<name>" in UTF-8 with the Java enum name of the type
// ("TOPIC:orders", "TRANSACTIONAL_ID:tx"; readers accept any case), and
// under /kafka-acl-extended-changes for the others, holding
//
//	{"version":1,"resourceType":"TOPIC","name":"orders-","patternType":"PREFIXED"}

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrCorrupt marks stored ACL data (a znode, a notification) that cannot be
// decoded. The error wrapping it says why.
var ErrCorrupt = errors.New("acl: corrupt")

const (
	zkACLVersion    = 1 // the acls znode's "version"; part of Kafka's format
	zkChangeVersion = 1 // ExtendedAclChangeEvent.currentVersion
)

// zkEntry is one element of "acls". Field order is Kafka's documented one.
type zkEntry struct {
	Principal      *string `json:"principal"`
	PermissionType *string `json:"permissionType"`
	Operation      *string `json:"operation"`
	Host           *string `json:"host"`
}

type zkACLs struct {
	Version *int      `json:"version"`
	ACLs    []zkEntry `json:"acls"`
}

// MarshalZNode encodes entries as a Kafka ACL znode, sorted and without
// duplicates so that equal sets encode equally. entries is not modified.
func MarshalZNode(entries []Entry) []byte {
	es := SortEntries(append([]Entry(nil), entries...))
	v := zkACLVersion
	out := zkACLs{Version: &v, ACLs: make([]zkEntry, len(es))}
	for i := range es {
		e := &es[i]
		perm, op := e.Permission.String(), e.Operation.String()
		out.ACLs[i] = zkEntry{Principal: &e.Principal, PermissionType: &perm, Operation: &op, Host: &e.Host}
	}
	b, err := json.Marshal(out)
	if err != nil {
		panic("acl: marshal znode: " + err.Error()) // strings and ints always marshal
	}
	return b
}

// UnmarshalZNode decodes a Kafka ACL znode into entries in SortEntries
// form. Empty data (or JSON null) is no entries. An error wraps ErrCorrupt:
// not JSON, a version other than 1, an entry missing a field, or a
// principal not of the form "Type:name". An operation or permission name
// it does not know decodes as OpUnknown or PermissionUnknown, as in Kafka.
func UnmarshalZNode(data []byte) ([]Entry, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	var zn *zkACLs
	if err := json.Unmarshal(data, &zn); err != nil {
		return nil, fmt.Errorf("%w: acl znode: %v", ErrCorrupt, err)
	}
	if zn == nil {
		return nil, nil
	}
	if zn.Version == nil || *zn.Version != zkACLVersion {
		return nil, fmt.Errorf("%w: acl znode version is not %d", ErrCorrupt, zkACLVersion)
	}
	out := make([]Entry, 0, len(zn.ACLs))
	for i, z := range zn.ACLs {
		if z.Principal == nil || z.PermissionType == nil || z.Operation == nil || z.Host == nil {
			return nil, fmt.Errorf("%w: acl %d lacks principal, permissionType, operation or host", ErrCorrupt, i)
		}
		if !validPrincipal(*z.Principal) {
			return nil, fmt.Errorf("%w: acl %d: principal %q is not Type:name", ErrCorrupt, i, *z.Principal)
		}
		op, _ := ParseOperation(*z.Operation)
		perm, _ := ParsePermission(*z.PermissionType)
		out = append(out, Entry{Principal: *z.Principal, Host: *z.Host, Operation: op, Permission: perm})
	}
	return SortEntries(out), nil
}

// javaEnumNames are Kafka's ResourceType enum names, which its change
// notifications carry.
var javaEnumNames = [numResourceTypes]string{"UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER",
	"TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"}

func javaEnumName(t ResourceType) string {
	if t >= 0 && t < numResourceTypes {
		return javaEnumNames[t]
	}
	return "UNKNOWN"
}

// zkChange is a /kafka-acl-extended-changes notification.
type zkChange struct {
	Version      int     `json:"version"`
	ResourceType *string `json:"resourceType"`
	Name         *string `json:"name"`
	PatternType  *string `json:"patternType"`
}

// MarshalChange encodes the change notification for p: extended reports
// whether it belongs under /kafka-acl-extended-changes (every pattern type
// but LITERAL) rather than /kafka-acl-changes.
func MarshalChange(p ResourcePattern) (data []byte, extended bool) {
	if p.PatternType == PatternLiteral {
		return []byte(javaEnumName(p.Type) + ":" + p.Name), false
	}
	rt, pt := javaEnumName(p.Type), p.PatternType.String()
	b, err := json.Marshal(zkChange{Version: zkChangeVersion, ResourceType: &rt, Name: &p.Name, PatternType: &pt})
	if err != nil {
		panic("acl: marshal change: " + err.Error())
	}
	return b, true
}

// UnmarshalChange decodes a change notification, from
// /kafka-acl-extended-changes when extended, else from /kafka-acl-changes.
// An error wraps ErrCorrupt: a literal notification without ':' or with an
// unknown type, an extended one that is not JSON, has a version above 1,
// lacks a field, or names an unknown or non-concrete type or pattern type.
func UnmarshalChange(data []byte, extended bool) (ResourcePattern, error) {
	if !extended {
		typ, name, ok := strings.Cut(string(data), ":")
		rt, known := ParseResourceType(typ)
		if !ok || !known || !rt.Concrete() {
			return ResourcePattern{}, fmt.Errorf("%w: acl change %q is not ResourceType:name", ErrCorrupt, data)
		}
		return ResourcePattern{Type: rt, Name: name, PatternType: PatternLiteral}, nil
	}
	var c zkChange
	if err := json.Unmarshal(data, &c); err != nil {
		return ResourcePattern{}, fmt.Errorf("%w: acl change: %v", ErrCorrupt, err)
	}
	if c.Version > zkChangeVersion || c.ResourceType == nil || c.Name == nil || c.PatternType == nil {
		return ResourcePattern{}, fmt.Errorf("%w: acl change %q: version above %d or a field missing", ErrCorrupt, data, zkChangeVersion)
	}
	rt, ok1 := ParseResourceType(*c.ResourceType)
	pt, ok2 := ParsePatternType(*c.PatternType)
	if !ok1 || !ok2 || !rt.Concrete() || !pt.Specific() {
		return ResourcePattern{}, fmt.Errorf("%w: acl change %q: resource type or pattern type", ErrCorrupt, data)
	}
	return ResourcePattern{Type: rt, Name: *c.Name, PatternType: pt}, nil
}
