package acl

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPatternFilterMatches follows Kafka's ResourcePatternFilterTest.
func TestPatternFilterMatches(t *testing.T) {
	tests := []struct {
		name    string
		filter  PatternFilter
		pattern ResourcePattern
		want    bool
	}{
		{"any type any pattern any name", AnyPattern, lit(ResourceGroup, "g"), true},
		{"type differs", PatternFilter{ResourceTopic, nil, PatternAny}, lit(ResourceGroup, "g"), false},
		{"type any", PatternFilter{ResourceAny, ptr("g"), PatternLiteral}, lit(ResourceGroup, "g"), true},
		{"literal exact", PatternFilter{ResourceTopic, ptr("Name"), PatternLiteral}, lit(ResourceTopic, "Name"), true},
		{"literal other name", PatternFilter{ResourceTopic, ptr("Name"), PatternLiteral}, lit(ResourceTopic, "Different"), false},
		{"literal is case sensitive", PatternFilter{ResourceTopic, ptr("NAME"), PatternLiteral}, lit(ResourceTopic, "Name"), false},
		{"literal filter vs prefixed", PatternFilter{ResourceTopic, ptr("Name"), PatternLiteral}, pre(ResourceTopic, "Name"), false},
		{"literal filter does not expand *", PatternFilter{ResourceTopic, ptr("Name"), PatternLiteral}, lit(ResourceTopic, "*"), false},
		{"literal * filter matches only *", PatternFilter{ResourceTopic, ptr("*"), PatternLiteral}, lit(ResourceTopic, "*"), true},
		{"literal * filter vs a name", PatternFilter{ResourceTopic, ptr("*"), PatternLiteral}, lit(ResourceTopic, "Name"), false},
		{"prefixed exact", PatternFilter{ResourceTopic, ptr("Name"), PatternPrefixed}, pre(ResourceTopic, "Name"), true},
		{"prefixed filter is not a prefix match", PatternFilter{ResourceTopic, ptr("Name"), PatternPrefixed}, pre(ResourceTopic, "Na"), false},
		{"prefixed filter vs literal", PatternFilter{ResourceTopic, ptr("Name"), PatternPrefixed}, lit(ResourceTopic, "Name"), false},
		{"any pattern literal", PatternFilter{ResourceTopic, ptr("Name"), PatternAny}, lit(ResourceTopic, "Name"), true},
		{"any pattern prefixed", PatternFilter{ResourceTopic, ptr("Name"), PatternAny}, pre(ResourceTopic, "Name"), true},
		{"any pattern is exact", PatternFilter{ResourceTopic, ptr("Name"), PatternAny}, pre(ResourceTopic, "Na"), false},
		{"any pattern does not expand *", PatternFilter{ResourceTopic, ptr("Name"), PatternAny}, lit(ResourceTopic, "*"), false},
		{"match literal", PatternFilter{ResourceTopic, ptr("Name"), PatternMatch}, lit(ResourceTopic, "Name"), true},
		{"match literal wildcard", PatternFilter{ResourceTopic, ptr("Name"), PatternMatch}, lit(ResourceTopic, "*"), true},
		{"match covering prefix", PatternFilter{ResourceTopic, ptr("Name"), PatternMatch}, pre(ResourceTopic, "Na"), true},
		{"match whole name as prefix", PatternFilter{ResourceTopic, ptr("Name"), PatternMatch}, pre(ResourceTopic, "Name"), true},
		{"match longer prefix", PatternFilter{ResourceTopic, ptr("Name"), PatternMatch}, pre(ResourceTopic, "Names"), false},
		{"match other literal", PatternFilter{ResourceTopic, ptr("Name"), PatternMatch}, lit(ResourceTopic, "Nam"), false},
		{"match nil name", PatternFilter{ResourceTopic, nil, PatternMatch}, pre(ResourceTopic, "x"), true},
		{"match other type", PatternFilter{ResourceGroup, ptr("Name"), PatternMatch}, lit(ResourceTopic, "*"), false},
		{"match * as a name", PatternFilter{ResourceTopic, ptr("*"), PatternMatch}, lit(ResourceTopic, "*"), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.filter.Matches(tc.pattern); got != tc.want {
				t.Errorf("%+v matches %v = %v, want %v", tc.filter, tc.pattern, got, tc.want)
			}
		})
	}
}

func TestEntryFilterMatches(t *testing.T) {
	e := allow(alice, "10.0.0.1", OpRead)
	tests := []struct {
		name   string
		filter EntryFilter
		want   bool
	}{
		{"any", AnyEntry, true},
		{"exact", e.Filter(), true},
		{"principal", EntryFilter{Principal: ptr(alice), Operation: OpAny, Permission: PermissionAny}, true},
		{"other principal", EntryFilter{Principal: ptr(bob), Operation: OpAny, Permission: PermissionAny}, false},
		{"wildcard principal is literal in filters", EntryFilter{Principal: ptr(WildcardPrincipal), Operation: OpAny, Permission: PermissionAny}, false},
		{"host", EntryFilter{Host: ptr("10.0.0.1"), Operation: OpAny, Permission: PermissionAny}, true},
		{"wildcard host is literal in filters", EntryFilter{Host: ptr("*"), Operation: OpAny, Permission: PermissionAny}, false},
		{"operation", EntryFilter{Operation: OpRead, Permission: PermissionAny}, true},
		{"all is not any", EntryFilter{Operation: OpAll, Permission: PermissionAny}, false},
		{"permission", EntryFilter{Operation: OpAny, Permission: PermissionDeny}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.filter.Matches(e); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFilterSelect is Kafka's testAclsFilter on DescribeAcls-style
// selection.
func TestFilterSelect(t *testing.T) {
	r1, r2 := lit(ResourceTopic, "foo-1"), lit(ResourceTopic, "bar-1")
	prefixed := pre(ResourceTopic, "bar-")
	acl1 := Binding{r1, allow(alice, "*", OpRead)}
	acl2 := Binding{r1, allow(alice, "192.168.0.1", OpWrite)}
	acl3 := Binding{r2, allow(alice, "*", OpDescribe)}
	acl4 := Binding{prefixed, allow(WildcardPrincipal, "*", OpRead)}
	all := []Binding{acl1, acl2, acl3, acl4}
	sel := func(f Filter) []Binding {
		var out []Binding
		for _, b := range all {
			if f.Matches(b) {
				out = append(out, b)
			}
		}
		return out
	}
	eq := func(name string, got, want []Binding) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: got %v, want %v", name, got, want)
			return
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: got %v, want %v", name, got, want)
			}
		}
	}
	eq("any", sel(AnyBinding), all)
	eq("resource1", sel(Filter{r1.Filter(), AnyEntry}), []Binding{acl1, acl2})
	eq("prefixed", sel(Filter{prefixed.Filter(), AnyEntry}), []Binding{acl4})
	eq("match", sel(Filter{PatternFilter{ResourceAny, ptr(r2.Name), PatternMatch}, AnyEntry}), []Binding{acl3, acl4})
	eq("exact", sel(acl1.Filter()), []Binding{acl1})
}

func TestFilterValidateAndExact(t *testing.T) {
	if err := AnyBinding.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []Filter{
		{PatternFilter{ResourceUnknown, nil, PatternAny}, AnyEntry},
		{PatternFilter{ResourceTopic, nil, PatternUnknown}, AnyEntry},
		{AnyPattern, EntryFilter{Operation: OpUnknown, Permission: PermissionAny}},
		{AnyPattern, EntryFilter{Operation: OpAny, Permission: PermissionUnknown}},
	}
	for _, f := range bad {
		if f.Validate() == nil {
			t.Errorf("%+v validated", f)
		}
	}
	if ps, ok := (PatternFilter{ResourceTopic, ptr("x"), PatternAny}).Exact(); !ok || len(ps) != 2 {
		t.Errorf("Exact(any) = %v, %v", ps, ok)
	}
	if _, ok := (PatternFilter{ResourceTopic, ptr("x"), PatternMatch}).Exact(); ok {
		t.Error("Exact(match) ok")
	}
	if _, ok := (PatternFilter{ResourceAny, ptr("x"), PatternLiteral}).Exact(); ok {
		t.Error("Exact(type any) ok")
	}
}

// TestCodesAreKafkas pins the numeric codes to kmsg's (the wire's).
func TestCodesAreKafkas(t *testing.T) {
	pairs := []struct{ ours, kmsg int8 }{
		{int8(ResourceAny), int8(kmsg.ACLResourceTypeAny)},
		{int8(ResourceTopic), int8(kmsg.ACLResourceTypeTopic)},
		{int8(ResourceGroup), int8(kmsg.ACLResourceTypeGroup)},
		{int8(ResourceCluster), int8(kmsg.ACLResourceTypeCluster)},
		{int8(ResourceTransactionalID), int8(kmsg.ACLResourceTypeTransactionalId)},
		{int8(ResourceDelegationToken), int8(kmsg.ACLResourceTypeDelegationToken)},
		{int8(ResourceUser), int8(kmsg.ACLResourceTypeUser)},
		{int8(PatternAny), int8(kmsg.ACLResourcePatternTypeAny)},
		{int8(PatternMatch), int8(kmsg.ACLResourcePatternTypeMatch)},
		{int8(PatternLiteral), int8(kmsg.ACLResourcePatternTypeLiteral)},
		{int8(PatternPrefixed), int8(kmsg.ACLResourcePatternTypePrefixed)},
		{int8(OpAny), int8(kmsg.ACLOperationAny)},
		{int8(OpAll), int8(kmsg.ACLOperationAll)},
		{int8(OpRead), int8(kmsg.ACLOperationRead)},
		{int8(OpWrite), int8(kmsg.ACLOperationWrite)},
		{int8(OpCreate), int8(kmsg.ACLOperationCreate)},
		{int8(OpDelete), int8(kmsg.ACLOperationDelete)},
		{int8(OpAlter), int8(kmsg.ACLOperationAlter)},
		{int8(OpDescribe), int8(kmsg.ACLOperationDescribe)},
		{int8(OpClusterAction), int8(kmsg.ACLOperationClusterAction)},
		{int8(OpDescribeConfigs), int8(kmsg.ACLOperationDescribeConfigs)},
		{int8(OpAlterConfigs), int8(kmsg.ACLOperationAlterConfigs)},
		{int8(OpIdempotentWrite), int8(kmsg.ACLOperationIdempotentWrite)},
		{int8(OpCreateTokens), int8(kmsg.ACLOperationCreateTokens)},
		{int8(OpDescribeTokens), int8(kmsg.ACLOperationDescribeTokens)},
		{int8(PermissionAny), int8(kmsg.ACLPermissionTypeAny)},
		{int8(PermissionDeny), int8(kmsg.ACLPermissionTypeDeny)},
		{int8(PermissionAllow), int8(kmsg.ACLPermissionTypeAllow)},
	}
	for i, p := range pairs {
		if p.ours != p.kmsg {
			t.Errorf("pair %d: ours %d, kmsg %d", i, p.ours, p.kmsg)
		}
	}
}

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Operation
	}{{"IdempotentWrite", OpIdempotentWrite}, {"IDEMPOTENT_WRITE", OpIdempotentWrite}, {"idempotentwrite", OpIdempotentWrite},
		{"Read", OpRead}, {"ALL", OpAll}, {"DescribeConfigs", OpDescribeConfigs}} {
		if got, ok := ParseOperation(tc.in); !ok || got != tc.want {
			t.Errorf("ParseOperation(%q) = %v, %v", tc.in, got, ok)
		}
	}
	for _, s := range []string{"", "Unknown", "Reed", "_"} {
		if got, ok := ParseOperation(s); ok {
			t.Errorf("ParseOperation(%q) = %v", s, got)
		}
	}
	for o := OpAll; o < numOperations; o++ {
		if got, ok := ParseOperation(o.String()); !ok || got != o {
			t.Errorf("round trip %v", o)
		}
	}
	for rt := ResourceTopic; rt < numResourceTypes; rt++ {
		for _, s := range []string{rt.String(), strings.ToUpper(rt.String())} {
			if got, ok := ParseResourceType(s); !ok || got != rt {
				t.Errorf("ParseResourceType(%q) = %v, %v", s, got, ok)
			}
		}
	}
	if ResourceTransactionalID.String() != "TransactionalId" || OpIdempotentWrite.String() != "IdempotentWrite" ||
		PermissionAllow.String() != "Allow" || PatternPrefixed.String() != "PREFIXED" {
		t.Error("names are not Kafka's")
	}
	if got := SupportedOperations(ResourceTransactionalID); len(got) != 2 || SupportedOperations(ResourceAny) != nil {
		t.Errorf("SupportedOperations = %v", got)
	}
}

func TestBindingValidate(t *testing.T) {
	good := Binding{lit(ResourceTopic, "t"), allow(alice, "*", OpRead)}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]Binding{
		"type any":      {ResourcePattern{ResourceAny, "t", PatternLiteral}, good.Entry},
		"pattern match": {ResourcePattern{ResourceTopic, "t", PatternMatch}, good.Entry},
		"empty name":    {lit(ResourceTopic, ""), good.Entry},
		"principal":     {good.Pattern, allow("alice", "*", OpRead)},
		"host":          {good.Pattern, allow(alice, "", OpRead)},
		"operation any": {good.Pattern, allow(alice, "*", OpAny)},
		"permission":    {good.Pattern, Entry{alice, "*", OpRead, PermissionAny}},
	}
	for name, b := range bad {
		if err := b.Validate(); err == nil {
			t.Errorf("%s: validated", name)
		}
	}
}
