package tlsconf

// FormatDN formats a certificate subject the way Kafka sees it: Kafka
// builds an SSL principal from X500Principal.getName(), Java's RFC 2253
// form, and ssl.principal.mapping.rules are written against that string.
// Go's pkix.Name.String is close but not equal (it knows POSTALCODE and
// SERIALNUMBER, not DC and UID, and escapes fewer characters), so the
// rules an operator copied from a Kafka setup would not match. This follows
// OpenJDK's X500Name.getRFC2253Name / AVA.toRFC2253String:
//
//   - RDNs last to first (the order in the certificate reversed), joined by
//     ","; the attributes of a multi-valued RDN joined by "+" in certificate
//     order.
//   - Keywords only for the RFC 2253 attributes CN, C, L, ST, O, OU,
//     STREET, DC, UID; any other attribute (emailAddress, serialNumber, ...)
//     as its dotted OID, and its value as "#" + hex of its DER encoding.
//     Values that are not strings are hex-encoded the same way.
//   - In string values, each of , = + < > # ; " \ is escaped with "\", a
//     NUL byte becomes \00, and leading and trailing spaces (and CRs) are
//     escaped with "\".

import (
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"strings"
	"unicode/utf16"
)

type rawATV struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// rdnSET: encoding/asn1 reads a type whose name ends in SET as a SET.
type rdnSET []rawATV

var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// FormatDN formats a DER-encoded X.509 Name (a certificate's RawSubject or
// RawIssuer) as Java's X500Principal.getName() does; see the file comment.
func FormatDN(rawName []byte) (string, error) {
	var rdns []rdnSET
	rest, err := asn1.Unmarshal(rawName, &rdns)
	if err != nil {
		return "", err
	}
	if len(rest) != 0 {
		return "", errors.New("tlsconf: trailing data after the distinguished name")
	}
	var b strings.Builder
	for i := len(rdns) - 1; i >= 0; i-- {
		if i != len(rdns)-1 {
			b.WriteByte(',')
		}
		for j, atv := range rdns[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			writeATV(&b, atv)
		}
	}
	return b.String(), nil
}

func writeATV(b *strings.Builder, atv rawATV) {
	oid := atv.Type.String()
	keyword, known := rfc2253Keywords[oid]
	if !known {
		keyword = oid
	}
	b.WriteString(keyword)
	b.WriteByte('=')
	s, isString := derString(atv.Value)
	if !known || !isString {
		b.WriteByte('#')
		b.WriteString(hex.EncodeToString(atv.Value.FullBytes))
		return
	}
	var v strings.Builder
	for _, c := range s {
		switch {
		case strings.ContainsRune(`,=+<>#;"\`, c):
			v.WriteByte('\\')
			v.WriteRune(c)
		case c == 0:
			v.WriteString(`\00`)
		default:
			v.WriteRune(c)
		}
	}
	escaped := v.String()
	isBlank := func(c byte) bool { return c == ' ' || c == '\r' }
	lead := 0
	for lead < len(escaped) && isBlank(escaped[lead]) {
		lead++
	}
	trail := len(escaped) - 1
	for trail >= 0 && isBlank(escaped[trail]) {
		trail--
	}
	for i := 0; i < len(escaped); i++ {
		if i < lead || i > trail {
			b.WriteByte('\\')
		}
		b.WriteByte(escaped[i])
	}
}

// derString returns the text of the string types Java's AVA treats as
// strings (isDerString: PrintableString, T61String, IA5String,
// GeneralString, BMPString, UTF8String).
func derString(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal {
		return "", false
	}
	switch v.Tag {
	case asn1.TagPrintableString, asn1.TagT61String, asn1.TagIA5String, asn1.TagUTF8String, 27: // 27: GeneralString
		return string(v.Bytes), true
	case asn1.TagBMPString:
		if len(v.Bytes)%2 != 0 {
			return "", false
		}
		u := make([]uint16, len(v.Bytes)/2)
		for i := range u {
			u[i] = uint16(v.Bytes[2*i])<<8 | uint16(v.Bytes[2*i+1])
		}
		return string(utf16.Decode(u)), true
	}
	return "", false
}
