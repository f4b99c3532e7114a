// Command decodegen writes server/decodebound_gen.go: the wire shape of
// every request kmsg decodes, read from the readFrom methods of kmsg's
// generated.go, for the decode budget (server/decodebound.go).
//
// kmsg's decoders are generated in one fixed style, so this reads them
// line by line: a version guard ("if version >= 3 {"), then one field
// read (readInt32, readString, an array, a nested struct), and for
// flexible versions the tag section. Anything else is an error naming
// the line, so a kmsg upgrade that changes the style fails here, loudly,
// rather than producing a wrong table. Run it with go generate ./server.
package main

import (
	"bytes"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	out := "decodebound_gen.go"
	if len(os.Args) > 1 {
		out = os.Args[1]
	}
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/twmb/franz-go/pkg/kmsg").Output()
	if err != nil {
		fail("locate kmsg: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), "generated.go"))
	if err != nil {
		fail("%v", err)
	}
	code, err := generate(src)
	if err != nil {
		fail("%v", err)
	}
	if err := os.WriteFile(out, code, 0o644); err != nil {
		fail("%v", err)
	}
}

func fail(f string, args ...any) {
	fmt.Fprintf(os.Stderr, "decodegen: "+f+"\n", args...)
	os.Exit(1)
}

var (
	reKey       = regexp.MustCompile(`^func \(\*(\w+Request)\) Key\(\) int16\s+\{ return (\d+) \}`)
	reReadFrom  = regexp.MustCompile(`^func \(v \*(\w+Request)\) readFrom\(src \[\]byte, unsafe bool\) error \{`)
	reFlexible  = regexp.MustCompile(`^isFlexible := version >= (\d+)$`)
	reGuard     = regexp.MustCompile(`^if version >= (\d+) && version <= (\d+) \{$|^if version >= (\d+) \{$|^if version <= (\d+) \{$|^\{$`)
	rePrim      = regexp.MustCompile(`^s\.(\w+) = (?:\w+\()?(readInt8|readInt16|readUint16|readInt32|readInt64|readBool|readUuid|b\.Float64)\(&?b?\)\)?$`)
	reStr       = regexp.MustCompile(`^(readString|readNullableString|readBytes|readNullableBytes)\(&b, &s\.(\w+), (isFlexible|false)(?:, unsafe)?\)$`)
	reArrStart  = regexp.MustCompile(`^v := s\.(\w+)$`)
	reArrLen    = regexp.MustCompile(`^l = (readArrayLen\(&b, isFlexible\)|b\.ArrayLen\(\))$`)
	reMake      = regexp.MustCompile(`^a = append\(a, make\(\[\]([\w\[\]]+), l\)\.\.\.\)$`)
	reElemPrim  = regexp.MustCompile(`^a\[i\] = (readInt8|readInt16|readInt32|readInt64|readUuid)\(&b\)$`)
	reElemStr   = regexp.MustCompile(`^(readString|readNullableString)\(&b, &a\[i\], isFlexible, unsafe\)$`)
	reNested    = regexp.MustCompile(`^v := &s\.(\w+)$`)
	reCase      = regexp.MustCompile(`^case (\d+):$`)
	reOldString = regexp.MustCompile(`^if version < (\d+) \{$`)
	reSetV      = regexp.MustCompile(`^s\.(\w+) = v$`)
	reNewPtr    = regexp.MustCompile(`^s\.(\w+) = new\((\w+)\)$`)
)

// field is one entry of a shape in the generated table.
type field struct {
	name       string
	kind       string // a dKind constant
	minV, maxV int
	tag        int
	elemKind   string
	shape      string // a shape variable
	size       string // an expression of the element's (or struct's) Go size
}

type gen struct {
	lines  []string
	i      int
	shapes map[string][]field // by shape variable
	order  []string
}

func (g *gen) next() string {
	if g.i >= len(g.lines) {
		return ""
	}
	l := g.lines[g.i]
	g.i++
	return l
}

func (g *gen) peek() string {
	if g.i >= len(g.lines) {
		return ""
	}
	return g.lines[g.i]
}

func (g *gen) expect(want string) error {
	if l := g.next(); l != want {
		return fmt.Errorf("line %q: want %q", l, want)
	}
	return nil
}

type request struct {
	key      int
	typ      string
	flexible int // -1: never
	shape    string
}

func generate(src []byte) ([]byte, error) {
	var raw []string
	for _, l := range strings.Split(string(src), "\n") {
		raw = append(raw, strings.TrimSpace(l))
	}
	keys := map[string]int{}
	for _, l := range raw {
		if m := reKey.FindStringSubmatch(l); m != nil {
			keys[m[1]], _ = strconv.Atoi(m[2])
		}
	}
	g := &gen{lines: raw, shapes: map[string][]field{}}
	var reqs []request
	for g.i < len(raw) {
		m := reReadFrom.FindStringSubmatch(g.next())
		if m == nil {
			continue
		}
		key, ok := keys[m[1]]
		if !ok {
			continue
		}
		r := request{key: key, typ: m[1], flexible: -1}
		for _, want := range []string{"v.Default()", "b := kbin.Reader{Src: src}", "version := v.Version", "_ = version"} {
			if err := g.expect(want); err != nil {
				return nil, fmt.Errorf("%s: %w", r.typ, err)
			}
		}
		if fm := reFlexible.FindStringSubmatch(g.peek()); fm != nil {
			r.flexible, _ = strconv.Atoi(fm[1])
			g.next()
			if err := g.expect("_ = isFlexible"); err != nil {
				return nil, fmt.Errorf("%s: %w", r.typ, err)
			}
		}
		if err := g.expect("s := v"); err != nil {
			return nil, fmt.Errorf("%s: %w", r.typ, err)
		}
		shape, err := g.structBody(r.typ, "return b.Complete()")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.typ, err)
		}
		r.shape = shape
		reqs = append(reqs, r)
	}
	if len(reqs) < 50 {
		return nil, fmt.Errorf("only %d request decoders found", len(reqs))
	}
	slices.SortFunc(reqs, func(a, b request) int { return a.key - b.key })

	var w bytes.Buffer
	fmt.Fprintf(&w, "// Code generated by server/internal/decodegen from kmsg's generated.go; DO NOT EDIT.\n\n")
	fmt.Fprintf(&w, "package server\n\nimport (\n\t\"unsafe\"\n\n\t\"github.com/twmb/franz-go/pkg/kmsg\"\n)\n\n")
	fmt.Fprintf(&w, "// requestShapes is the wire shape of every request kmsg decodes, by key.\nvar requestShapes = map[int16]requestShape{\n")
	for _, r := range reqs {
		fmt.Fprintf(&w, "\t%d: {flexible: %d, size: unsafe.Sizeof(kmsg.%s{}), shape: %s},\n", r.key, r.flexible, r.typ, r.shape)
	}
	fmt.Fprintf(&w, "}\n\n")
	for _, name := range g.order {
		fmt.Fprintf(&w, "var %s = &dShape{\n", name)
		for _, f := range g.shapes[name] {
			fmt.Fprintf(&w, "\t{kind: %s, minV: %d, maxV: %d, tag: %d", f.kind, f.minV, f.maxV, f.tag)
			if f.elemKind != "" {
				fmt.Fprintf(&w, ", elem: %s", f.elemKind)
			}
			if f.shape != "" {
				fmt.Fprintf(&w, ", shape: %s", f.shape)
			}
			if f.size != "" {
				fmt.Fprintf(&w, ", size: %s", f.size)
			}
			fmt.Fprintf(&w, "}, // %s\n", f.name)
		}
		fmt.Fprintf(&w, "}\n\n")
	}
	return format.Source(w.Bytes())
}

// newShape registers an empty shape for Go type typ and returns its
// variable name; a type decoded in several places gets one shape each
// (they are equal).
func (g *gen) newShape(typ string) string {
	name := "shape" + typ
	for n := 2; ; n++ {
		if _, dup := g.shapes[name]; !dup {
			break
		}
		name = fmt.Sprintf("shape%s%d", typ, n)
	}
	g.shapes[name] = nil
	g.order = append(g.order, name)
	return name
}

// structBody reads a struct's fields up to the line end (consumed) and
// returns its shape variable.
func (g *gen) structBody(typ string, end ...string) (string, error) {
	name := g.newShape(typ)
	var fields []field
	for {
		l := g.next()
		switch {
		case slices.Contains(end, l):
			g.shapes[name] = fields
			return name, nil
		case l == "":
			return "", fmt.Errorf("%s: end of file before %q", typ, end)
		case l == "if isFlexible {":
			tagged, err := g.tags(typ)
			if err != nil {
				return "", err
			}
			fields = append(fields, tagged...)
		case reGuard.MatchString(l):
			m := reGuard.FindStringSubmatch(l)
			minV, maxV := 0, 32767
			switch {
			case m[1] != "":
				minV, _ = strconv.Atoi(m[1])
				maxV, _ = strconv.Atoi(m[2])
			case m[3] != "":
				minV, _ = strconv.Atoi(m[3])
			case m[4] != "":
				maxV, _ = strconv.Atoi(m[4])
			}
			f, err := g.fieldRead(typ)
			if err != nil {
				return "", err
			}
			if err := g.expect("}"); err != nil {
				return "", fmt.Errorf("%s.%s: %w", typ, f.name, err)
			}
			f.minV, f.maxV, f.tag = minV, maxV, -1
			fields = append(fields, f)
		default:
			return "", fmt.Errorf("%s: unexpected line %q", typ, l)
		}
	}
}

// tags reads a tag section after "if isFlexible {", closing brace
// included, and returns its known tagged fields.
func (g *gen) tags(typ string) ([]field, error) {
	l := g.next()
	if l == "internalReadTags(&b, &s.UnknownTags)" {
		return nil, g.expect("}")
	}
	if l != "for i := b.Uvarint(); i > 0 && b.Ok(); i-- {" {
		return nil, fmt.Errorf("%s: tags: unexpected line %q", typ, l)
	}
	for _, want := range []string{"switch key := b.Uvarint(); key {", "default:", "s.UnknownTags.Set(key, b.Span(int(b.Uvarint())))"} {
		if err := g.expect(want); err != nil {
			return nil, fmt.Errorf("%s: tags: %w", typ, err)
		}
	}
	var fields []field
	for {
		l := g.next()
		if l == "}" {
			break
		}
		m := reCase.FindStringSubmatch(l)
		if m == nil {
			return nil, fmt.Errorf("%s: tags: unexpected line %q", typ, l)
		}
		if err := g.expect("b := kbin.Reader{Src: b.Span(int(b.Uvarint()))}"); err != nil {
			return nil, fmt.Errorf("%s: tag %s: %w", typ, m[1], err)
		}
		f, err := g.fieldRead(typ)
		if err != nil {
			return nil, err
		}
		for _, want := range []string{"if err := b.Complete(); err != nil {", "return err", "}"} {
			if err := g.expect(want); err != nil {
				return nil, fmt.Errorf("%s: tag %s: %w", typ, m[1], err)
			}
		}
		f.tag, _ = strconv.Atoi(m[1])
		f.minV, f.maxV = 0, 32767
		fields = append(fields, f)
	}
	return fields, multi(g, "}", "}")
}

func multi(g *gen, want ...string) error {
	for _, w := range want {
		if err := g.expect(w); err != nil {
			return err
		}
	}
	return nil
}

var primKind = map[string]string{
	"readInt8": "dInt8", "readBool": "dInt8", "readInt16": "dInt16", "readUint16": "dInt16",
	"readInt32": "dInt32", "readInt64": "dInt64", "b.Float64": "dInt64", "readUuid": "dUUID",
}

var strKind = map[string]string{
	"readString": "dString", "readNullableString": "dNullString",
	"readBytes": "dBytes", "readNullableBytes": "dNullBytes",
}

// fieldRead reads the statements that decode one field.
func (g *gen) fieldRead(typ string) (field, error) {
	l := g.next()
	if m := rePrim.FindStringSubmatch(l); m != nil {
		return field{name: m[1], kind: primKind[m[2]]}, nil
	}
	if m := reStr.FindStringSubmatch(l); m != nil {
		f := field{name: m[2], kind: strKind[m[1]]}
		if m[3] == "false" {
			f.kind += "Std"
		}
		return f, nil
	}
	if m := reOldString.FindStringSubmatch(l); m != nil {
		// A nullable string that older versions could not send as null.
		f := field{name: "?", kind: "dNullString"}
		if err := multi(g, "v := new(string)", "readString(&b, v, isFlexible, unsafe)"); err != nil {
			return field{}, fmt.Errorf("%s: %w", typ, err)
		}
		set := reSetV.FindStringSubmatch(g.next())
		if set == nil {
			return field{}, fmt.Errorf("%s: unexpected line %q", typ, g.lines[g.i-1])
		}
		f.name = set[1]
		if err := multi(g, "} else {", "readNullableString(&b, &s."+f.name+", isFlexible, unsafe)", "}"); err != nil {
			return field{}, fmt.Errorf("%s.%s: %w", typ, f.name, err)
		}
		return f, nil
	}
	if m := reNested.FindStringSubmatch(l); m != nil {
		if err := multi(g, "v.Default()", "s := v"); err != nil {
			return field{}, fmt.Errorf("%s.%s: %w", typ, m[1], err)
		}
		// The struct's fields run to the guard's closing brace, which
		// the caller consumes: stop before it.
		shape, err := g.inlineBody(typ + m[1])
		if err != nil {
			return field{}, err
		}
		return field{name: m[1], kind: "dStruct", shape: shape}, nil
	}
	if l == "if present := b.Int8(); present != -1 && b.Ok() {" {
		m := reNewPtr.FindStringSubmatch(g.next())
		if m == nil {
			return field{}, fmt.Errorf("%s: nullable struct: unexpected line %q", typ, g.lines[g.i-1])
		}
		if err := multi(g, "v := s."+m[1], "v.Default()", "s := v"); err != nil {
			return field{}, fmt.Errorf("%s.%s: %w", typ, m[1], err)
		}
		shape, err := g.structBody(m[2], "}")
		if err != nil {
			return field{}, err
		}
		return field{name: m[1], kind: "dNullStruct", shape: shape, size: "unsafe.Sizeof(kmsg." + m[2] + "{})"}, nil
	}
	m := reArrStart.FindStringSubmatch(l)
	if m == nil {
		return field{}, fmt.Errorf("%s: unexpected line %q", typ, l)
	}
	f := field{name: m[1], kind: "dArray"}
	if err := multi(g, "a := v", "var l int32"); err != nil {
		return field{}, fmt.Errorf("%s.%s: %w", typ, f.name, err)
	}
	lm := reArrLen.FindStringSubmatch(g.next())
	if lm == nil {
		return field{}, fmt.Errorf("%s.%s: array length: unexpected line %q", typ, f.name, g.lines[g.i-1])
	}
	if lm[1] == "b.ArrayLen()" {
		f.kind = "dArrayStd"
	}
	if err := g.emptyArray(); err != nil {
		return field{}, fmt.Errorf("%s.%s: %w", typ, f.name, err)
	}
	if l := g.next(); l != "if !b.Ok() {" && !strings.HasPrefix(l, "if !b.Ok() || int64(l)*") {
		return field{}, fmt.Errorf("%s.%s: array check: unexpected line %q", typ, f.name, l)
	}
	if err := multi(g, "return kbin.ErrNotEnoughData", "}"); err != nil {
		return field{}, fmt.Errorf("%s.%s: %w", typ, f.name, err)
	}
	if err := g.emptyArray(); err != nil {
		return field{}, fmt.Errorf("%s.%s: %w", typ, f.name, err)
	}
	if err := multi(g, "a = a[:0]", "if l > 0 {"); err != nil {
		return field{}, fmt.Errorf("%s.%s: %w", typ, f.name, err)
	}
	mm := reMake.FindStringSubmatch(g.next())
	if mm == nil {
		return field{}, fmt.Errorf("%s.%s: unexpected line %q", typ, f.name, g.lines[g.i-1])
	}
	elem := mm[1]
	if err := multi(g, "}", "for i := range a {"); err != nil {
		return field{}, fmt.Errorf("%s.%s: %w", typ, f.name, err)
	}
	el := g.next()
	switch {
	case reElemPrim.MatchString(el):
		f.elemKind = primKind[reElemPrim.FindStringSubmatch(el)[1]]
		f.size = "unsafe.Sizeof(" + elem + "{})"
		if !strings.HasPrefix(elem, "[") {
			f.size = "unsafe.Sizeof(" + elem + "(0))"
		}
		if err := g.expect("}"); err != nil {
			return field{}, err
		}
	case reElemStr.MatchString(el):
		f.elemKind = strKind[reElemStr.FindStringSubmatch(el)[1]]
		f.size = "unsafe.Sizeof(" + elem + "(\"\"))"
		if strings.HasPrefix(elem, "*") {
			f.size = "unsafe.Sizeof((*string)(nil))"
		}
		if err := g.expect("}"); err != nil {
			return field{}, err
		}
	case el == "v := &a[i]":
		if err := multi(g, "v.Default()", "s := v"); err != nil {
			return field{}, fmt.Errorf("%s.%s: %w", typ, f.name, err)
		}
		shape, err := g.structBody(elem, "}")
		if err != nil {
			return field{}, err
		}
		f.elemKind, f.shape, f.size = "dStruct", shape, "unsafe.Sizeof(kmsg."+elem+"{})"
	default:
		return field{}, fmt.Errorf("%s.%s: element: unexpected line %q", typ, f.name, el)
	}
	if err := multi(g, "v = a", "s."+f.name+" = v"); err != nil {
		return field{}, fmt.Errorf("%s.%s: %w", typ, f.name, err)
	}
	return f, nil
}

// emptyArray skips the lines that make a nullable array read in an old
// version (or empty) a non-nil empty slice, when they come next: they
// allocate nothing.
func (g *gen) emptyArray() error {
	if !strings.HasPrefix(g.peek(), "if version < ") || !strings.HasSuffix(g.peek(), "|| l == 0 {") {
		return nil
	}
	g.next()
	if l := g.next(); !strings.HasPrefix(l, "a = []") {
		return fmt.Errorf("unexpected line %q", l)
	}
	return g.expect("}")
}

// inlineBody reads the fields of a nested struct value up to, not
// including, the closing brace of the guard around it.
func (g *gen) inlineBody(typ string) (string, error) {
	// structBody stops at and consumes its end line; give it back.
	name, err := g.structBody(typ, "}", "if err := b.Complete(); err != nil {")
	if err != nil {
		return "", err
	}
	g.i--
	return name, nil
}
