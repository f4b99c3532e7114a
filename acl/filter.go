package acl

import (
	"fmt"
	"strings"
)

// PatternFilter selects resource patterns, as DescribeAcls and DeleteAcls
// do (Kafka's ResourcePatternFilter):
//
//   - Type Any matches every type, otherwise the type must be equal;
//   - Name nil matches every name;
//   - PatternType Any matches LITERAL and PREFIXED patterns with exactly
//     Name; LITERAL or PREFIXED match that pattern type with exactly Name;
//   - PatternType Match matches every pattern that would apply to a
//     resource called Name: the LITERAL Name, the LITERAL "*", and every
//     PREFIXED pattern that is a prefix of Name.
type PatternFilter struct {
	Type        ResourceType
	Name        *string // nil: any name
	PatternType PatternType
}

// AnyPattern matches every pattern.
var AnyPattern = PatternFilter{Type: ResourceAny, PatternType: PatternAny}

// Filter returns the filter that matches exactly p.
func (p ResourcePattern) Filter() PatternFilter {
	name := p.Name
	return PatternFilter{Type: p.Type, Name: &name, PatternType: p.PatternType}
}

// Matches reports whether f selects p.
func (f PatternFilter) Matches(p ResourcePattern) bool {
	if f.Type != ResourceAny && f.Type != p.Type {
		return false
	}
	if f.PatternType != PatternAny && f.PatternType != PatternMatch && f.PatternType != p.PatternType {
		return false
	}
	if f.Name == nil {
		return true
	}
	name := *f.Name
	if f.PatternType == PatternAny || f.PatternType == p.PatternType {
		return name == p.Name
	}
	// PatternMatch
	switch p.PatternType {
	case PatternLiteral:
		return name == p.Name || p.Name == WildcardResource
	case PatternPrefixed:
		return strings.HasPrefix(name, p.Name)
	}
	return false
}

// Validate refuses a filter that can match nothing sensible: an Unknown
// type or pattern type. An error wraps ErrInvalid.
func (f PatternFilter) Validate() error {
	if f.Type == ResourceUnknown || f.Type < 0 || f.Type >= numResourceTypes {
		return fmt.Errorf("%w: filter resource type %v", ErrInvalid, f.Type)
	}
	if f.PatternType == PatternUnknown || f.PatternType < 0 || f.PatternType >= numPatternTypes {
		return fmt.Errorf("%w: filter pattern type %v", ErrInvalid, f.PatternType)
	}
	return nil
}

// Exact returns the stored patterns that f can match when it names them
// exactly: a concrete type, a name, and LITERAL, PREFIXED or ANY (both).
// ok is false when f needs a scan (Type Any, Name nil, or Match). Stores use
// it to look a filter's patterns up without listing everything.
func (f PatternFilter) Exact() (patterns []ResourcePattern, ok bool) {
	if !f.Type.Concrete() || f.Name == nil {
		return nil, false
	}
	switch f.PatternType {
	case PatternLiteral, PatternPrefixed:
		return []ResourcePattern{{f.Type, *f.Name, f.PatternType}}, true
	case PatternAny:
		return []ResourcePattern{{f.Type, *f.Name, PatternLiteral}, {f.Type, *f.Name, PatternPrefixed}}, true
	}
	return nil, false
}

// EntryFilter selects entries (Kafka's AccessControlEntryFilter): a nil
// Principal or Host matches any, otherwise it must be equal (no wildcard
// expansion: a filter for "User:alice" does not select "User:*" entries);
// Operation and Permission Any match any.
type EntryFilter struct {
	Principal  *string
	Host       *string
	Operation  Operation
	Permission Permission
}

// AnyEntry matches every entry.
var AnyEntry = EntryFilter{Operation: OpAny, Permission: PermissionAny}

// Filter returns the filter that matches exactly e.
func (e Entry) Filter() EntryFilter {
	p, h := e.Principal, e.Host
	return EntryFilter{Principal: &p, Host: &h, Operation: e.Operation, Permission: e.Permission}
}

// Matches reports whether f selects e.
func (f EntryFilter) Matches(e Entry) bool {
	return (f.Principal == nil || *f.Principal == e.Principal) &&
		(f.Host == nil || *f.Host == e.Host) &&
		(f.Operation == OpAny || f.Operation == e.Operation) &&
		(f.Permission == PermissionAny || f.Permission == e.Permission)
}

// Validate refuses Unknown operations and permissions. An error wraps
// ErrInvalid.
func (f EntryFilter) Validate() error {
	if f.Operation <= OpUnknown || f.Operation >= numOperations {
		return fmt.Errorf("%w: filter operation %v", ErrInvalid, f.Operation)
	}
	if f.Permission <= PermissionUnknown || f.Permission >= numPermissions {
		return fmt.Errorf("%w: filter permission %v", ErrInvalid, f.Permission)
	}
	return nil
}

// Filter selects bindings: both its parts must match.
type Filter struct {
	Pattern PatternFilter
	Entry   EntryFilter
}

// AnyBinding matches every binding.
var AnyBinding = Filter{Pattern: AnyPattern, Entry: AnyEntry}

// Filter returns the filter that matches exactly b.
func (b Binding) Filter() Filter { return Filter{Pattern: b.Pattern.Filter(), Entry: b.Entry.Filter()} }

// Matches reports whether f selects b.
func (f Filter) Matches(b Binding) bool {
	return f.Pattern.Matches(b.Pattern) && f.Entry.Matches(b.Entry)
}

// Validate validates both parts.
func (f Filter) Validate() error {
	if err := f.Pattern.Validate(); err != nil {
		return err
	}
	return f.Entry.Validate()
}
