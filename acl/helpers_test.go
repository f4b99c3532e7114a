package acl

func lit(rt ResourceType, name string) ResourcePattern {
	return ResourcePattern{Type: rt, Name: name, PatternType: PatternLiteral}
}

func pre(rt ResourceType, name string) ResourcePattern {
	return ResourcePattern{Type: rt, Name: name, PatternType: PatternPrefixed}
}

func allow(principal, host string, op Operation) Entry {
	return Entry{Principal: principal, Host: host, Operation: op, Permission: PermissionAllow}
}

func deny(principal, host string, op Operation) Entry {
	return Entry{Principal: principal, Host: host, Operation: op, Permission: PermissionDeny}
}

func bind(p ResourcePattern, es ...Entry) []Binding {
	out := make([]Binding, len(es))
	for i, e := range es {
		out[i] = Binding{Pattern: p, Entry: e}
	}
	return out
}

const (
	alice = "User:alice"
	bob   = "User:bob"
)

func ptr(s string) *string { return &s }
