package tlsconf

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"testing"
)

// TestFormatDN checks FormatDN against Java: each want is what
// X500Principal.getName() printed (OpenJDK 17, jshell) for the same
// subject, so that rules written for Kafka match the same strings here.
func TestFormatDN(t *testing.T) {
	oid := func(s ...int) asn1.ObjectIdentifier { return s }
	for _, tc := range []struct {
		name    string
		subject pkix.Name
		want    string
	}{
		{"plain", pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"acme"}, Country: []string{"US"}},
			`CN=alice,OU=eng,O=acme,C=US`},
		{"escapes and OIDs", pkix.Name{
			CommonName: "Tkac, Adam =#x;\"<>+\\", Organization: []string{" lead", "trail "}, SerialNumber: "1234",
			PostalCode: []string{"99"}, Locality: []string{"Fulton"}, Province: []string{"MD"}, StreetAddress: []string{"1 Main"},
			ExtraNames: []pkix.AttributeTypeAndValue{
				{Type: oid(1, 2, 840, 113549, 1, 9, 1), Value: "a@b.c"},
				{Type: oid(0, 9, 2342, 19200300, 100, 1, 25), Value: "com"},
				{Type: oid(0, 9, 2342, 19200300, 100, 1, 1), Value: "u1"},
			}},
			`UID=u1,DC=com,1.2.840.113549.1.9.1=#0c056140622e63,2.5.4.5=#130431323334,CN=Tkac\, Adam \=\#x\;\"\<\>\+\\,O=\ lead+O=trail\ ,2.5.4.17=#13023939,STREET=1 Main,L=Fulton,ST=MD`},
		{"leading hash, non-ASCII", pkix.Name{CommonName: "#hash ü"}, `CN=\#hash ü`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := asn1.Marshal(tc.subject.ToRDNSequence())
			if err != nil {
				t.Fatal(err)
			}
			got, err := FormatDN(raw)
			if err != nil || got != tc.want {
				t.Errorf("FormatDN = %q, %v\nwant          %q", got, err, tc.want)
			}
		})
	}
	t.Run("multi-valued RDN", func(t *testing.T) {
		raw, _ := asn1.Marshal(pkix.RDNSequence{
			{{Type: oid(2, 5, 4, 6), Value: "US"}},
			{{Type: oid(2, 5, 4, 3), Value: "a"}, {Type: oid(2, 5, 4, 11), Value: "b"}},
		})
		if got, err := FormatDN(raw); err != nil || got != "CN=a+OU=b,C=US" {
			t.Errorf("FormatDN = %q, %v", got, err)
		}
	})
	t.Run("garbage", func(t *testing.T) {
		if _, err := FormatDN([]byte{0x30, 0x05, 1}); err == nil {
			t.Error("no error for a truncated name")
		}
	})
}
