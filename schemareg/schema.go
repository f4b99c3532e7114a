package schemareg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/linker"
	"github.com/hamba/avro/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
)

// Schema types, as the REST API and the _schemas values name them.
const (
	typeAvro     = "AVRO"
	typeProtobuf = "PROTOBUF"
	typeJSON     = "JSON"
)

// Bounds on what one registration may make the registry parse. A schema
// over them is refused with 42201 before any parser runs.
const (
	// maxSchemaDepth bounds the nesting of brackets ({ and [) in a schema
	// text outside strings: the parsers recurse once per level.
	maxSchemaDepth = 64
	// maxReferences bounds the schemas one registration pulls in through
	// references, transitively.
	maxReferences = 256
	// maxReferenceDepth bounds a chain of references.
	maxReferenceDepth = 32
)

// parsedSchema is a schema the registry has parsed and can compare.
type parsedSchema struct {
	typ string
	// text is what is stored: the text as given with insignificant JSON
	// whitespace removed (Avro, JSON), or normalized when asked.
	text string
	// same identifies the schema for "registered already?": two schemas
	// with the same type, rendering (Avro: hamba/avro's full JSON; JSON: the
	// compacted or normalized text; Protobuf: the compiled descriptor) and
	// references are the same schema.
	same string

	avro  avro.Schema
	proto linker.Files
	json  *jsonschema.Schema
	doc   any // the JSON Schema document, for checkJSON
}

// resolvedRef is one referenced schema, its dependencies before it.
type resolvedRef struct {
	name string
	sv   *schemaValue
}

// resolveRefsLocked returns the schemas refs reach, transitively, each
// after the ones it references. A reference to a missing or soft-deleted
// version, a cycle, or too many or too deep references is an
// errInvalidSchema.
// REQUIRES: r.view.mu held.
func (r *Registry) resolveRefsLocked(refs []Reference) ([]resolvedRef, error) {
	var out []resolvedRef
	done := map[subjectVersion]bool{}
	onStack := map[subjectVersion]bool{}
	var visit func(refs []Reference, depth int) error
	visit = func(refs []Reference, depth int) error {
		if depth > maxReferenceDepth {
			return fmt.Errorf("%w: references nested deeper than %d", errInvalidSchema, maxReferenceDepth)
		}
		for _, ref := range refs {
			if ref.Name == "" || ref.Subject == "" {
				return fmt.Errorf("%w: a reference needs a name and a subject", errInvalidSchema)
			}
			var sv *schemaValue
			if s := r.view.subjects[ref.Subject]; s != nil {
				if ref.Version == -1 {
					if vs := r.view.versionsLocked(ref.Subject, false); len(vs) > 0 {
						sv = vs[len(vs)-1]
					}
				} else {
					sv = s.versions[ref.Version]
				}
			}
			if sv == nil || sv.Deleted {
				return fmt.Errorf("%w: reference %q: subject %q version %d not found", errInvalidSchema, ref.Name, ref.Subject, ref.Version)
			}
			k := subjectVersion{sv.Subject, sv.Version}
			if onStack[k] {
				return fmt.Errorf("%w: cyclic reference through subject %q version %d", errInvalidSchema, sv.Subject, sv.Version)
			}
			if done[k] {
				continue
			}
			if len(done) >= maxReferences {
				return fmt.Errorf("%w: more than %d references", errInvalidSchema, maxReferences)
			}
			onStack[k] = true
			if err := visit(sv.References, depth+1); err != nil {
				return err
			}
			onStack[k] = false
			done[k] = true
			out = append(out, resolvedRef{name: ref.Name, sv: sv})
		}
		return nil
	}
	if err := visit(refs, 0); err != nil {
		return nil, err
	}
	return out, nil
}

// parseSchema parses text of type typ with its resolved references. Every
// parse failure is an errInvalidSchema.
func parseSchema(typ, text string, refs []Reference, deps []resolvedRef, normalize bool) (*parsedSchema, error) {
	if typ == "" {
		typ = typeAvro
	}
	if err := checkDepth(typ, text); err != nil {
		return nil, err
	}
	for _, d := range deps {
		if err := checkDepth(typ, d.sv.Schema); err != nil {
			return nil, err
		}
	}
	p := &parsedSchema{typ: typ}
	if len(refs) == 0 {
		refs = nil // "references": [] is no references, as an absent list
	}
	refKey, _ := json.Marshal(refs)
	switch typ {
	case typeAvro:
		cache := &avro.SchemaCache{}
		for _, d := range deps {
			if _, err := avro.ParseWithCache(d.sv.Schema, "", cache); err != nil {
				return nil, fmt.Errorf("%w: reference %q: %w", errInvalidSchema, d.name, err)
			}
		}
		s, err := parseAvro(text, cache)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errInvalidSchema, err)
		}
		full, err := json.Marshal(s)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errInvalidSchema, err)
		}
		p.avro = s
		p.text = compactJSON(text)
		if normalize {
			p.text = string(full)
		}
		p.same = string(full)
	case typeJSON:
		c := jsonschema.NewCompiler()
		c.UseLoader(jsonschema.SchemeURLLoader{}) // never read files or the network
		// The root has a hierarchical base URL, so that a relative $ref
		// ("address.json") resolves against it to where its reference
		// was added; an absolute one is added as named.
		const root = "https://sluice.invalid/schema-registry/__sluice_root__.json"
		base, _ := url.Parse(root)
		for _, d := range deps {
			doc, err := jsonschema.UnmarshalJSON(strings.NewReader(d.sv.Schema))
			if err == nil {
				var ref *url.URL
				if ref, err = url.Parse(d.name); err == nil {
					err = c.AddResource(base.ResolveReference(ref).String(), doc)
				}
			}
			if err != nil {
				return nil, fmt.Errorf("%w: reference %q: %w", errInvalidSchema, d.name, err)
			}
		}
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errInvalidSchema, err)
		}
		if err := c.AddResource(root, doc); err != nil {
			return nil, fmt.Errorf("%w: %w", errInvalidSchema, err)
		}
		p.doc = doc
		if p.json, err = c.Compile(root); err != nil {
			return nil, fmt.Errorf("%w: %w", errInvalidSchema, err)
		}
		p.text = compactJSON(text)
		if normalize {
			b, _ := json.Marshal(doc) // maps marshal with sorted keys
			p.text = string(b)
		}
		p.same = p.text
	case typeProtobuf:
		files := map[string]string{}
		for _, d := range deps {
			files[d.name] = d.sv.Schema
		}
		const root = "sluice-schema-registry-root.proto"
		files[root] = text
		c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(protoResolver(files))} // proto_descriptor.go
		out, err := c.Compile(context.Background(), root)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errInvalidSchema, err)
		}
		p.proto = out
		p.text = text
		// The compiled descriptor, not the text: whitespace and comments
		// do not make another schema (Confluent compares its canonical
		// rendering of the descriptor).
		fd := protodesc.ToFileDescriptorProto(out[0])
		fd.SourceCodeInfo = nil
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(fd)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errInvalidSchema, err)
		}
		p.same = string(b)
		p.text = protoTextOf(text, files, root, b) // a base64 descriptor kept as .proto source: proto_descriptor.go
	default:
		return nil, fmt.Errorf("%w: unknown schema type %q", errInvalidSchema, typ)
	}
	p.same = typ + "\x00" + p.same + "\x00" + string(refKey)
	return p, nil
}

// parseAvro parses an Avro schema, recovering from a parser panic (the
// parser is a dependency; bad input must not take the broker down).
func parseAvro(text string, cache *avro.SchemaCache) (s avro.Schema, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("avro parser failed: %v", p)
		}
	}()
	return avro.ParseWithCache(text, "", cache)
}

// checkDepth refuses a text whose nesting is deeper than maxSchemaDepth:
// brackets ({ and [) outside strings for JSON (Avro, JSON Schema); braces,
// brackets, parentheses and angle brackets outside string literals and
// comments for a .proto. Unbalanced closers are ignored: the parser
// refuses them.
func checkDepth(typ, text string) error {
	proto := typ == typeProtobuf
	depth := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '"' || (proto && c == '\''):
			// Skip the string literal, escapes included.
			for i++; i < len(text) && text[i] != c; i++ {
				if text[i] == '\\' {
					i++
				}
			}
		case proto && c == '/' && i+1 < len(text) && text[i+1] == '/':
			for i < len(text) && text[i] != '\n' {
				i++
			}
		case proto && c == '/' && i+1 < len(text) && text[i+1] == '*':
			end := strings.Index(text[i+2:], "*/")
			if end < 0 {
				return nil // an unterminated comment: the parser refuses it
			}
			i += end + 3
		case c == '{' || c == '[' || (proto && (c == '<' || c == '(')):
			depth++
			if depth > maxSchemaDepth {
				return fmt.Errorf("%w: nested deeper than %d levels", errInvalidSchema, maxSchemaDepth)
			}
		case c == '}' || c == ']' || (proto && (c == '>' || c == ')')):
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}

func compactJSON(text string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(text)); err != nil {
		return text
	}
	return b.String()
}

func jsonMarshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// compatibility returns why next cannot follow prev (oldest first) at
// level, or nothing when it can. Non-transitive levels check only the
// latest of prev, as Confluent's CompatibilityChecker.
//
// Avro: Avro's schema resolution rules (hamba/avro's SchemaCompatibility):
// BACKWARD means next can read what prev wrote, FORWARD the other way.
// JSON Schema and Protobuf: see checkProtobuf and checkJSON.
func compatibility(level string, next *parsedSchema, prev []*parsedSchema) []string {
	if h := testHookCompat.Load(); h != nil {
		(*h)()
	}
	var backward, forward bool
	switch level {
	case "NONE":
		return nil
	case "BACKWARD", "BACKWARD_TRANSITIVE":
		backward = true
	case "FORWARD", "FORWARD_TRANSITIVE":
		forward = true
	case "FULL", "FULL_TRANSITIVE":
		backward, forward = true, true
	}
	if !strings.HasSuffix(level, "_TRANSITIVE") && len(prev) > 1 {
		prev = prev[len(prev)-1:]
	}
	var msgs []string
	for _, old := range prev {
		if backward {
			if err := canRead(next, old); err != nil {
				msgs = append(msgs, fmt.Sprintf("the new schema cannot read data written with an older one (%s): %v", level, err))
			}
		}
		if forward {
			if err := canRead(old, next); err != nil {
				msgs = append(msgs, fmt.Sprintf("an older schema cannot read data written with the new one (%s): %v", level, err))
			}
		}
	}
	return msgs
}

// testHookCompat, when set (by tests only), runs at the start of every
// compatibility check.
var testHookCompat atomic.Pointer[func()]

// canRead reports whether reader can read what writer wrote.
func canRead(reader, writer *parsedSchema) (err error) {
	if reader.typ != writer.typ {
		return fmt.Errorf("schema type changed from %s to %s", writer.typ, reader.typ)
	}
	switch reader.typ {
	case typeAvro:
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("avro compatibility check failed: %v", p)
			}
		}()
		return checkAvro(reader.avro, writer.avro)
	case typeProtobuf:
		return checkProtobuf(reader, writer)
	case typeJSON:
		return checkJSON(reader, writer)
	}
	return errors.New("unknown schema type")
}
