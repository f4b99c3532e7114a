package tlsconf

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"strings"
	"testing"
)

// FuzzFormatDN feeds FormatDN arbitrary DER (a client certificate's
// subject comes from the network). Invariants: it never panics; a name it
// formats is stable (formatting the same bytes again gives the same
// string); the Go-encoded names in the corpus format without error.
func FuzzFormatDN(f *testing.F) {
	for _, n := range []pkix.Name{
		{CommonName: "alice"},
		{CommonName: "bob", OrganizationalUnit: []string{"eng", "ops"}, Organization: []string{"Acme, Inc."}, Country: []string{"US"}},
		{CommonName: "#lead\\ing+plus=eq", Locality: []string{" spaced "}},
	} {
		der, err := asn1.Marshal(n.ToRDNSequence())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(der)
	}
	f.Add([]byte{0x30, 0x00})
	f.Add([]byte{0x30, 0x80})
	f.Fuzz(func(t *testing.T, der []byte) {
		s, err := FormatDN(der)
		if err != nil {
			return
		}
		if s2, err := FormatDN(der); err != nil || s2 != s {
			t.Fatalf("not stable: %q then %q, %v", s, s2, err)
		}
	})
}

// FuzzPrincipalMappingRules parses arbitrary ssl.principal.mapping.rules
// and applies them to a DN. Invariants: neither step panics; mapping is
// deterministic (the same rules and DN give the same name and outcome);
// DEFAULT maps a DN to itself.
func FuzzPrincipalMappingRules(f *testing.F) {
	for _, r := range []string{"DEFAULT", "RULE:^CN=(.*?),OU=(.*?)$/$1@$2/L,DEFAULT", "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
		"RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/,RULE:(.*)/bad\\/slash/", "RULE:x", ""} {
		f.Add(r, "CN=Duke,OU=JavaSoft,O=Sun Microsystems,C=US")
	}
	f.Fuzz(func(t *testing.T, rules, dn string) {
		m, err := ParsePrincipalMappingRules(rules)
		if err != nil {
			return
		}
		name, nerr := m.Name(dn)
		_ = m.String()
		again, err := ParsePrincipalMappingRules(rules)
		if err != nil {
			t.Fatalf("%q parsed once, then not: %v", rules, err)
		}
		name2, nerr2 := again.Name(dn)
		if name != name2 || (nerr == nil) != (nerr2 == nil) {
			t.Fatalf("rules %q: %q/%v, re-parsed %q/%v", rules, name, nerr, name2, nerr2)
		}
		if strings.TrimSpace(rules) == "DEFAULT" && (nerr != nil || name != dn) {
			t.Fatalf("DEFAULT mapped %q to %q, %v", dn, name, nerr)
		}
	})
}
