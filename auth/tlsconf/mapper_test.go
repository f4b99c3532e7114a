package tlsconf

import (
	"errors"
	"testing"
)

// The cases of Kafka's SslPrincipalMapperTest (clients/src/test/java/org/
// apache/kafka/common/security/ssl/SslPrincipalMapperTest.java), with
// Java's string escapes undone.

func TestPrincipalMappingRulesValid(t *testing.T) {
	for _, rules := range []string{
		`DEFAULT`,
		`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/`,
		`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT`,
		`RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/`,
		`RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L`,
		`RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U`,
		`RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/`,
		`RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/`,
	} {
		if _, err := ParsePrincipalMappingRules(rules); err != nil {
			t.Errorf("%s: %v", rules, err)
		}
	}
}

func TestPrincipalMappingRulesInvalid(t *testing.T) {
	for _, rules := range []string{
		`default`,
		`DEFAUL`,
		`DEFAULT/L`,
		`DEFAULT/U`,
		`RULE:CN=(.*?),OU=ServiceUsers.*/$1`,
		`rule:^CN=(.*?),OU=ServiceUsers.*$/$1/`,
		`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U`,
		`RULE:^CN=(.*?),OU=ServiceUsers.*$/L`,
		`RULE:^CN=(.*?),OU=ServiceUsers.*$/U`,
		`RULE:^CN=(.*?),OU=ServiceUsers.*$/LU`,
		// Not Kafka's: Java syntax that Go's regexp (RE2) lacks, and
		// replacements Java's Matcher would throw on.
		`RULE:^CN=(?=a)(.*)$/$1/`,
		`RULE:^CN=(.*)$/$x/`,
		`RULE:^CN=(.*)$/${nope}/`,
	} {
		if m, err := ParsePrincipalMappingRules(rules); err == nil {
			t.Errorf("%s: parsed as %s, want an error", rules, m)
		}
	}
}

func TestPrincipalMapper(t *testing.T) {
	m, err := ParsePrincipalMappingRules(`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, ` +
		`RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, ` +
		`RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U, ` +
		`RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, ` +
		`DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dn, want string }{
		{"CN=Duke,OU=ServiceUsers,O=Org,C=US", "duke"},
		{"CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US", "duke@sme"},
		{"cn=duke,ou=sme,dc=mycp,dc=com", "DUKE@SME"},
		{"cN=duke,OU=JavaSoft,O=Sun Microsystems", "DUKE"},
		{"OU=JavaSoft,O=Sun Microsystems,C=US", "OU=JavaSoft,O=Sun Microsystems,C=US"},
	} {
		if got, err := m.Name(tc.dn); err != nil || got != tc.want {
			t.Errorf("Name(%q) = %q, %v; want %q", tc.dn, got, err, tc.want)
		}
	}
}

func TestPrincipalMappingRulesSplitting(t *testing.T) {
	for _, tc := range []struct{ rules, want string }{
		// seeing is believing
		{``, `[]`},
		{`DEFAULT`, `[DEFAULT]`},
		{`RULE://`, `[RULE:/]`},
		{`RULE:/.*/`, `[RULE:/.*]`},
		{`RULE:/.*/L`, `[RULE:/.*/L]`},
		{`RULE://,DEFAULT`, `[RULE:/, DEFAULT]`},
		{`  RULE:// ,  DEFAULT  `, `[RULE:/, DEFAULT]`},
		{`  RULE:   /     / ,  DEFAULT  `, `[RULE:   /     , DEFAULT]`},
		{`  RULE:  /     /U   ,DEFAULT  `, `[RULE:  /     /U, DEFAULT]`},
		{`  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  `, `[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]`},
		// empty rules are ignored
		{`,   , , ,      , , ,   `, `[]`},
		{`,,RULE://,,,DEFAULT,,`, `[RULE:/, DEFAULT]`},
		{`,  , RULE: /   /    ,,,   DEFAULT, ,   `, `[RULE: /   , DEFAULT]`},
		{`     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,`, `[RULE:   /  /U, DEFAULT]`},
		// escape sequences
		{`RULE:\/\\\(\)\n\t/\/\//`, `[RULE:\/\\\(\)\n\t/\/\/]`},
		{`RULE:\**\/+/*/L,RULE:\/*\**/**/`, `[RULE:\**\/+/*/L, RULE:\/*\**/**]`},
		// rules rule
		{`RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT`,
			`[RULE:,RULE:,/,RULE:,\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]`},
		// Sluice also takes newlines as separators.
		{"RULE:^CN=(.*)$/$1/L\nDEFAULT", `[RULE:^CN=(.*)$/$1/L, DEFAULT]`},
		{"\n  RULE:a/b/ \n\n RULE:c/d/U,\nDEFAULT\n", `[RULE:a/b, RULE:c/d/U, DEFAULT]`},
	} {
		m, err := ParsePrincipalMappingRules(tc.rules)
		if err != nil {
			t.Errorf("%q: %v", tc.rules, err)
			continue
		}
		if got := m.String(); got != tc.want {
			t.Errorf("%q: split as %s, want %s", tc.rules, got, tc.want)
		}
	}
}

func TestPrincipalMapperCommaWithWhitespace(t *testing.T) {
	m, err := ParsePrincipalMappingRules(`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.Name(`CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz`); err != nil || got != `Tkac\, Adam` {
		t.Errorf("got %q, %v", got, err)
	}
}

// TestPrincipalMapperReplacement covers Java's replacement syntax and
// Kafka's handling of group numbers beyond the pattern's groups.
func TestPrincipalMapperReplacement(t *testing.T) {
	for _, tc := range []struct{ rule, dn, want string }{
		{`RULE:^CN=(.*?),O=(.*)$/$2:$1/`, "CN=a,O=b", "b:a"},
		{`RULE:^CN=(.*?),O=(.*)$/$3-$1/`, "CN=a,O=b", "$3-a"}, // $3: no such group, literal
		{`RULE:^CN=(.*?),O=(.*)$/$12/`, "CN=a,O=b", "a2"},     // $12 is $1 then "2"
		{`RULE:^CN=(.*?),O=(.*)$/\$1 $0/`, "CN=a,O=b", "$1 CN=a,O=b"},
		{`RULE:^CN=(?P<user>[^,]*).*$/${user}/U`, "CN=bob,OU=x", "BOB"},
		{`RULE:^CN=([^,]*).*$/svc\/$1/`, "CN=bob,OU=x", "svc/bob"},
		{`RULE:CN=([^,]*)/user=$1/`, "CN=bob", "user=bob"},
	} {
		m, err := ParsePrincipalMappingRules(tc.rule)
		if err != nil {
			t.Errorf("%s: %v", tc.rule, err)
			continue
		}
		if got, err := m.Name(tc.dn); err != nil || got != tc.want {
			t.Errorf("%s on %q = %q, %v; want %q", tc.rule, tc.dn, got, err, tc.want)
		}
	}
}

func TestPrincipalMapperNoMatch(t *testing.T) {
	m, err := ParsePrincipalMappingRules(`RULE:^CN=(.*),OU=ServiceUsers$/$1/`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Name("CN=alice,OU=eng"); !errors.Is(err, ErrNoMatchingRule) {
		t.Errorf("err = %v, want ErrNoMatchingRule", err)
	}
	// Kafka: "" means no rules at all, so nobody maps.
	empty, err := ParsePrincipalMappingRules("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := empty.Name("CN=alice"); !errors.Is(err, ErrNoMatchingRule) {
		t.Errorf("empty rules: err = %v, want ErrNoMatchingRule", err)
	}
}
