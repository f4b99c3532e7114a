package schemareg

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
)

// A Protobuf schema is registered either as .proto source or, as
// confluent-kafka-python (1.x) and other serializers send it, as the
// standard base64 of a serialized FileDescriptorProto: Confluent's
// ProtobufSchema accepts both (it parses the text and, when that fails,
// decodes the descriptor) and keeps .proto text. Sluice compiles either
// form (a reference may be in either form too) and keeps a descriptor as
// .proto source rendered from it (protoTextOf) when that compiles back to
// the same descriptor, else as sent.

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

// fillJSONName sets f's json_name, when absent, to protoc's default.
func fillJSONName(f *descriptorpb.FieldDescriptorProto) {
	if f.JsonName == nil {
		f.JsonName = proto.String(defaultJSONName(f.GetName()))
	}
}

// defaultJSONName is protoc's json_name of a field named name: the name
// with each underscore dropped and the letter after it upper-cased.
func defaultJSONName(name string) string {
	var b strings.Builder
	up := false
	for _, r := range name {
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
	return b.String()
}

// protoTextOf is the text kept for a Protobuf schema: .proto source as
// given; a base64 descriptor rendered as .proto source (as Confluent keeps
// it, so that clients that parse the schema they read by id, such as
// kafkajs's, can use it) when that source compiles, with files' other
// entries as its imports, to the same descriptor (want: its deterministic
// encoding without source info), else the base64 as given.
func protoTextOf(text string, files map[string]string, root string, want []byte) string {
	fd, err := descriptorFromBase64(text)
	if err != nil || fd == nil {
		return text
	}
	src, ok := protoSource(fd)
	if !ok {
		return text
	}
	withSrc := make(map[string]string, len(files))
	for k, v := range files {
		withSrc[k] = v
	}
	withSrc[root] = src
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(protoResolver(withSrc))}
	out, err := c.Compile(context.Background(), root)
	if err != nil {
		return text
	}
	got := protodesc.ToFileDescriptorProto(out[0])
	got.SourceCodeInfo = nil
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(got)
	if err != nil || !bytes.Equal(b, want) {
		return text
	}
	return src
}

// protoSource renders fd as .proto source: syntax, package, imports,
// messages (fields, maps, oneofs, nested messages and enums, reserved
// ranges and names) and enums. ok is false for what it does not render
// (options, extensions, services, groups, editions, proto2 defaults);
// protoTextOf checks the rendering by compiling it.
func protoSource(fd *descriptorpb.FileDescriptorProto) (string, bool) {
	if fd.Options != nil || len(fd.Extension) > 0 || len(fd.Service) > 0 || len(fd.WeakDependency) > 0 {
		return "", false
	}
	syntax := fd.GetSyntax()
	if syntax == "" {
		syntax = "proto2"
	}
	if syntax != "proto2" && syntax != "proto3" {
		return "", false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "syntax = %q;\n", syntax)
	if fd.Package != nil {
		fmt.Fprintf(&b, "package %s;\n", fd.GetPackage())
	}
	for i, dep := range fd.Dependency {
		if slices.Contains(fd.PublicDependency, int32(i)) {
			fmt.Fprintf(&b, "import public %q;\n", dep)
		} else {
			fmt.Fprintf(&b, "import %q;\n", dep)
		}
	}
	for _, e := range fd.EnumType {
		if !writeEnum(&b, e, "") {
			return "", false
		}
	}
	for _, m := range fd.MessageType {
		if !writeMessage(&b, m, "", syntax, 0) {
			return "", false
		}
	}
	return b.String(), true
}

func writeEnum(b *strings.Builder, e *descriptorpb.EnumDescriptorProto, indent string) bool {
	if e.Options != nil {
		return false
	}
	fmt.Fprintf(b, "%senum %s {\n", indent, e.GetName())
	for _, v := range e.Value {
		if v.Options != nil {
			return false
		}
		fmt.Fprintf(b, "%s  %s = %d;\n", indent, v.GetName(), v.GetNumber())
	}
	for _, r := range e.ReservedRange {
		fmt.Fprintf(b, "%s  reserved %d to %d;\n", indent, r.GetStart(), r.GetEnd()) // enum ranges are inclusive
	}
	for _, n := range e.ReservedName {
		fmt.Fprintf(b, "%s  reserved %q;\n", indent, n)
	}
	fmt.Fprintf(b, "%s}\n", indent)
	return true
}

var protoScalars = map[descriptorpb.FieldDescriptorProto_Type]string{
	descriptorpb.FieldDescriptorProto_TYPE_DOUBLE: "double", descriptorpb.FieldDescriptorProto_TYPE_FLOAT: "float",
	descriptorpb.FieldDescriptorProto_TYPE_INT64: "int64", descriptorpb.FieldDescriptorProto_TYPE_UINT64: "uint64",
	descriptorpb.FieldDescriptorProto_TYPE_INT32: "int32", descriptorpb.FieldDescriptorProto_TYPE_FIXED64: "fixed64",
	descriptorpb.FieldDescriptorProto_TYPE_FIXED32: "fixed32", descriptorpb.FieldDescriptorProto_TYPE_BOOL: "bool",
	descriptorpb.FieldDescriptorProto_TYPE_STRING: "string", descriptorpb.FieldDescriptorProto_TYPE_BYTES: "bytes",
	descriptorpb.FieldDescriptorProto_TYPE_UINT32: "uint32", descriptorpb.FieldDescriptorProto_TYPE_SFIXED32: "sfixed32",
	descriptorpb.FieldDescriptorProto_TYPE_SFIXED64: "sfixed64", descriptorpb.FieldDescriptorProto_TYPE_SINT32: "sint32",
	descriptorpb.FieldDescriptorProto_TYPE_SINT64: "sint64",
}

// fieldType is f's type as written in source: a scalar's name, or the
// fully qualified name of its message or enum.
func fieldType(f *descriptorpb.FieldDescriptorProto) (string, bool) {
	switch f.GetType() {
	case descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, descriptorpb.FieldDescriptorProto_TYPE_ENUM:
		if !strings.HasPrefix(f.GetTypeName(), ".") {
			return "", false
		}
		return f.GetTypeName(), true
	}
	t, ok := protoScalars[f.GetType()]
	return t, ok
}

func writeMessage(b *strings.Builder, m *descriptorpb.DescriptorProto, indent, syntax string, depth int) bool {
	if depth > maxSchemaDepth || m.Options != nil || len(m.Extension) > 0 || len(m.ExtensionRange) > 0 {
		return false
	}
	fmt.Fprintf(b, "%smessage %s {\n", indent, m.GetName())
	in := indent + "  "
	// Map entries are written as map<K, V> fields, not as messages.
	entries := map[string]*descriptorpb.DescriptorProto{}
	for _, n := range m.NestedType {
		if n.GetOptions().GetMapEntry() {
			if len(n.Field) != 2 {
				return false
			}
			entries[n.GetName()] = n
		}
	}
	field := func(f *descriptorpb.FieldDescriptorProto, in string, inOneof bool) bool {
		if f.Options != nil || f.DefaultValue != nil || f.GetType() == descriptorpb.FieldDescriptorProto_TYPE_GROUP || f.Extendee != nil {
			return false
		}
		label := ""
		switch {
		case f.GetLabel() == descriptorpb.FieldDescriptorProto_LABEL_REPEATED:
			label = "repeated "
		case f.GetLabel() == descriptorpb.FieldDescriptorProto_LABEL_REQUIRED:
			label = "required "
		case inOneof:
		case syntax == "proto2" || f.GetProto3Optional():
			label = "optional "
		}
		typ, ok := fieldType(f)
		if !ok {
			return false
		}
		tn := f.GetTypeName()
		if e, isMap := entries[tn[strings.LastIndex(tn, ".")+1:]]; isMap && label == "repeated " && strings.HasSuffix(tn, "."+m.GetName()+"."+e.GetName()) {
			kt, ok1 := fieldType(e.Field[0])
			vt, ok2 := fieldType(e.Field[1])
			if !ok1 || !ok2 {
				return false
			}
			label, typ = "", fmt.Sprintf("map<%s, %s>", kt, vt)
		}
		jsonName := ""
		if f.JsonName != nil && f.GetJsonName() != defaultJSONName(f.GetName()) {
			jsonName = fmt.Sprintf(" [json_name = %q]", f.GetJsonName())
		}
		fmt.Fprintf(b, "%s%s%s %s = %d%s;\n", in, label, typ, f.GetName(), f.GetNumber(), jsonName)
		return true
	}
	// Nested declarations first: a map field's entry then follows them in
	// the compiled descriptor, as in the one rendered when they were
	// declared before the fields (protoTextOf keeps the descriptor as sent
	// when they were not).
	for _, e := range m.EnumType {
		if !writeEnum(b, e, in) {
			return false
		}
	}
	for _, n := range m.NestedType {
		if _, isMap := entries[n.GetName()]; isMap {
			continue
		}
		if !writeMessage(b, n, in, syntax, depth+1) {
			return false
		}
	}
	written := map[int32]bool{}
	for _, f := range m.Field {
		if f.OneofIndex != nil && !f.GetProto3Optional() {
			oi := f.GetOneofIndex()
			if written[oi] {
				continue
			}
			written[oi] = true
			if int(oi) >= len(m.OneofDecl) || m.OneofDecl[oi].Options != nil {
				return false
			}
			fmt.Fprintf(b, "%soneof %s {\n", in, m.OneofDecl[oi].GetName())
			for _, g := range m.Field {
				if g.OneofIndex != nil && g.GetOneofIndex() == oi && !g.GetProto3Optional() && !field(g, in+"  ", true) {
					return false
				}
			}
			fmt.Fprintf(b, "%s}\n", in)
			continue
		}
		if !field(f, in, false) {
			return false
		}
	}
	for _, r := range m.ReservedRange {
		fmt.Fprintf(b, "%sreserved %d to %d;\n", in, r.GetStart(), r.GetEnd()-1) // message ranges are end-exclusive
	}
	for _, n := range m.ReservedName {
		fmt.Fprintf(b, "%sreserved %q;\n", in, n)
	}
	fmt.Fprintf(b, "%s}\n", indent)
	return true
}
