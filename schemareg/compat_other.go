package schemareg

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Compatibility of Protobuf and JSON Schema: the main rules of Confluent's
// ProtobufSchema/JsonSchema diffs, not all of them. What is checked is
// listed here and in README ("Schema registry").
//
// Protobuf (both directions alike, as protobuf's wire format is):
//   - a message the writer has, by full name, that the reader lacks is
//     not checked (a removed message type is allowed);
//   - a field number both have must keep its kind: scalar vs message vs
//     enum (FIELD_KIND_CHANGED), a message or enum field its type's full
//     name (FIELD_NAMED_TYPE_CHANGED), a scalar a wire-compatible scalar
//     (FIELD_SCALAR_KIND_CHANGED: int32/uint32/int64/uint64/bool,
//     sint32/sint64, fixed32/sfixed32, fixed64/sfixed64, string/bytes);
//   - a field may not move into or out of a oneof with other fields
//     (ONEOF_FIELD_REMOVED / FIELD_MOVED_TO_EXISTING_ONEOF), and may not
//     change between repeated and singular.
//
// JSON Schema (reader must accept what writer accepts, per keyword):
//   - "type" at the root and of each property both declare must be the
//     same or widened in the reader;
//   - a property the reader requires must be required by the writer too;
//   - with "additionalProperties": false in the reader, every property
//     the writer declares must be declared by the reader.

func checkProtobuf(reader, writer *parsedSchema) error {
	readerMsgs := map[protoreflect.FullName]protoreflect.MessageDescriptor{}
	for _, f := range reader.proto {
		walkMessages(f.Messages(), func(m protoreflect.MessageDescriptor) { readerMsgs[m.FullName()] = m })
	}
	var err error
	for _, f := range writer.proto {
		walkMessages(f.Messages(), func(wm protoreflect.MessageDescriptor) {
			rm := readerMsgs[wm.FullName()]
			if rm == nil || err != nil {
				return
			}
			wf := wm.Fields()
			for i := 0; i < wf.Len(); i++ {
				w := wf.Get(i)
				r := rm.Fields().ByNumber(w.Number())
				if r == nil {
					continue
				}
				if e := protoFieldCompatible(r, w); e != nil {
					err = fmt.Errorf("message %s field %d: %w", wm.FullName(), w.Number(), e)
					return
				}
			}
		})
	}
	return err
}

func walkMessages(ms protoreflect.MessageDescriptors, fn func(protoreflect.MessageDescriptor)) {
	for i := 0; i < ms.Len(); i++ {
		m := ms.Get(i)
		fn(m)
		walkMessages(m.Messages(), fn)
	}
}

func protoKindClass(k protoreflect.Kind) int {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Uint32Kind, protoreflect.Int64Kind, protoreflect.Uint64Kind, protoreflect.BoolKind:
		return 1
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return 2
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return 3
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return 4
	case protoreflect.StringKind, protoreflect.BytesKind:
		return 5
	case protoreflect.FloatKind:
		return 6
	case protoreflect.DoubleKind:
		return 7
	case protoreflect.EnumKind:
		return 8
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return 9
	}
	return 0
}

func protoFieldCompatible(r, w protoreflect.FieldDescriptor) error {
	if r.IsList() != w.IsList() || r.IsMap() != w.IsMap() {
		return fmt.Errorf("changed between repeated and singular")
	}
	rc, wc := protoKindClass(r.Kind()), protoKindClass(w.Kind())
	switch {
	case rc != wc && (rc >= 8 || wc >= 8):
		return fmt.Errorf("kind changed from %s to %s (FIELD_KIND_CHANGED)", w.Kind(), r.Kind())
	case rc != wc:
		return fmt.Errorf("scalar kind changed from %s to %s (FIELD_SCALAR_KIND_CHANGED)", w.Kind(), r.Kind())
	case rc == 9 && r.Message().FullName() != w.Message().FullName():
		return fmt.Errorf("type changed from %s to %s (FIELD_NAMED_TYPE_CHANGED)", w.Message().FullName(), r.Message().FullName())
	case rc == 8 && r.Enum().FullName() != w.Enum().FullName():
		return fmt.Errorf("type changed from %s to %s (FIELD_NAMED_TYPE_CHANGED)", w.Enum().FullName(), r.Enum().FullName())
	}
	ro, wo := r.ContainingOneof(), w.ContainingOneof()
	realOneof := func(o protoreflect.OneofDescriptor) bool { return o != nil && !o.IsSynthetic() }
	if realOneof(ro) != realOneof(wo) {
		return fmt.Errorf("moved into or out of a oneof")
	}
	return nil
}

func checkJSON(reader, writer *parsedSchema) error {
	return jsonAccepts(reader.doc, writer.doc, "#", 0)
}

// jsonTypes is a schema's "type" keyword as a set; nil when absent (any).
func jsonTypes(s map[string]any) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			if str, ok := e.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}

func jsonAccepts(readerDoc, writerDoc any, path string, depth int) error {
	r, ok1 := readerDoc.(map[string]any)
	w, ok2 := writerDoc.(map[string]any)
	if !ok1 || !ok2 || depth > maxSchemaDepth {
		return nil
	}
	rt, wt := jsonTypes(r), jsonTypes(w)
	if rt != nil {
		if wt == nil {
			return fmt.Errorf("%s: type narrowed from any to %v (TYPE_NARROWED)", path, rt)
		}
		for _, t := range wt {
			if !slices.Contains(rt, t) && !(t == "integer" && slices.Contains(rt, "number")) {
				return fmt.Errorf("%s: type %q no longer accepted (TYPE_CHANGED)", path, t)
			}
		}
	}
	rreq, _ := r["required"].([]any)
	wreq, _ := w["required"].([]any)
	for _, p := range rreq {
		if !slices.Contains(wreq, p) {
			return fmt.Errorf("%s: property %v is newly required (REQUIRED_ATTRIBUTE_ADDED)", path, p)
		}
	}
	rprops, _ := r["properties"].(map[string]any)
	wprops, _ := w["properties"].(map[string]any)
	if ap, ok := r["additionalProperties"].(bool); ok && !ap {
		for name := range wprops {
			if _, ok := rprops[name]; !ok {
				return fmt.Errorf("%s: property %q removed from a closed content model (PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL)", path, name)
			}
		}
	}
	for name, rp := range rprops {
		if wp, ok := wprops[name]; ok {
			if err := jsonAccepts(rp, wp, path+"/properties/"+name, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}
