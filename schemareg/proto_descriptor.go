package schemareg

import (
	"encoding/base64"
	"fmt"
	"io/fs"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

// A Protobuf schema is registered either as .proto source or, as
// confluent-kafka-python (1.x) and other serializers send it, as the
// standard base64 of a serialized FileDescriptorProto: Confluent's
// ProtobufSchema accepts both (it parses the text and, when that fails,
// decodes the descriptor). Sluice keeps the text as given and compiles
// either form; a reference may be in either form too.

// protoResolver resolves the files of one compilation, by import path:
// source is parsed, a base64 FileDescriptorProto is linked as it is (named
// by the path it is imported as).
func protoResolver(files map[string]string) protocompile.Resolver {
	return protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
		text, ok := files[path]
		if !ok {
			return protocompile.SearchResult{}, fs.ErrNotExist
		}
		fd, err := descriptorFromBase64(text)
		if err != nil {
			return protocompile.SearchResult{}, fmt.Errorf("%s: %w", path, err)
		}
		if fd != nil {
			fd.Name = proto.String(path)
			return protocompile.SearchResult{Proto: fd}, nil
		}
		return protocompile.SearchResult{Source: strings.NewReader(text)}, nil
	})
}

// descriptorFromBase64 returns the FileDescriptorProto text encodes in
// standard base64, or nil when text is not that (.proto source always has
// characters outside base64's alphabet: spaces, ';', '{', '"'). A
// descriptor whose messages nest deeper than maxSchemaDepth is an error,
// as such source is (checkDepth).
func descriptorFromBase64(text string) (*descriptorpb.FileDescriptorProto, error) {
	text = strings.TrimSpace(text)
	if text == "" || strings.IndexFunc(text, func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '+' || r == '/' || r == '=')
	}) >= 0 {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return nil, nil
	}
	fd := &descriptorpb.FileDescriptorProto{}
	if err := proto.Unmarshal(b, fd); err != nil {
		return nil, nil
	}
	// protoc leaves json_name out of the descriptors it embeds in
	// generated code; the linker takes an absent one for a custom ""
	// (and refuses two of them), so fill in protoc's default.
	for _, m := range fd.MessageType {
		if !fillJSONNames(m, 1) {
			return nil, fmt.Errorf("%w: messages nested deeper than %d levels", errInvalidSchema, maxSchemaDepth)
		}
	}
	for _, f := range fd.Extension {
		fillJSONName(f)
	}
	return fd, nil
}

// fillJSONNames gives every field of m and of its nested messages without
// a json_name protoc's default one; false when messages nest deeper than
// maxSchemaDepth (m is at depth).
func fillJSONNames(m *descriptorpb.DescriptorProto, depth int) bool {
	if depth > maxSchemaDepth {
		return false
	}
	for _, f := range m.Field {
		fillJSONName(f)
	}
	for _, f := range m.Extension {
		fillJSONName(f)
	}
	for _, n := range m.NestedType {
		if !fillJSONNames(n, depth+1) {
			return false
		}
	}
	return true
}

// fillJSONName sets f's json_name, when absent, as protoc does: the name
// with each underscore dropped and the letter after it upper-cased.
func fillJSONName(f *descriptorpb.FieldDescriptorProto) {
	if f.JsonName != nil {
		return
	}
	var b strings.Builder
	up := false
	for _, r := range f.GetName() {
		switch {
		case r == '_':
			up = true
		case up && r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
			up = false
		default:
			b.WriteRune(r)
			up = false
		}
	}
	f.JsonName = proto.String(b.String())
}
