package schemareg

import (
	"encoding/base64"
	"errors"
	"testing"
)

// FuzzProtobufDescriptor parses arbitrary bytes sent, base64-encoded, as a
// Protobuf schema (proto_descriptor.go). Invariants: parseSchema never
// panics; it either refuses the input as errInvalidSchema or returns a
// schema whose text is the input unchanged or .proto source rendered from
// it; and parsing that text again gives the same schema (same identity).
func FuzzProtobufDescriptor(f *testing.F) {
	f.Add([]byte("\n\rsr_user.proto\x12\nsluice.e2e\"!\n\x04User\x12\x0c\n\x04name\x18\x01 \x01(\t\x12\x0b\n\x03age\x18\x02 \x01(\x05b\x06proto3"))
	f.Add([]byte("\n\x01a\"\x0b\n\x01M\x12\x06\n\x01x\x18\x01"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		text := base64.StdEncoding.EncodeToString(b)
		p, err := parseSchema(typeProtobuf, text, nil, nil, false)
		if err != nil {
			if !errors.Is(err, errInvalidSchema) {
				t.Fatalf("error %v is not errInvalidSchema", err)
			}
			return
		}
		if p.text != text && isBase64Descriptor(p.text) {
			t.Fatalf("text %q kept as another base64 descriptor %q", text, p.text)
		}
		again, err := parseSchema(typeProtobuf, p.text, nil, nil, false)
		if err != nil || again.same != p.same {
			t.Fatalf("reparsing %q: %v, same identity %v", text, err, err == nil && again.same == p.same)
		}
	})
}

// isBase64Descriptor reports whether text is a base64 descriptor.
func isBase64Descriptor(text string) bool {
	fd, err := descriptorFromBase64(text)
	return err == nil && fd != nil
}
