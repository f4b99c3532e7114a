package schemareg

// The record name of a registered schema, from which Confluent's
// RecordNameStrategy (subject = record name) and TopicRecordNameStrategy
// (subject = <topic>-<record name>) derive a record's subject. Broker-side
// schema validation with those strategies (server/schema_validate.go) asks
// for it by the id a record carries, as Confluent Server does, and then
// checks that the id is registered under the derived subject.

import (
	"context"
	"errors"
	"fmt"

	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// ErrNoRecordName: the schema has no record name a strategy can use (a
// JSON Schema without a "title", a Protobuf message index that names no
// message).
var ErrNoRecordName = errors.New("schemareg: the schema names no record")

// RecordName returns the record name of the schema registered with id, as
// Confluent's serializers name it: Avro, the full name of a named type
// (record, enum, fixed) and the type's name otherwise; JSON Schema, its
// "title"; Protobuf, the full name of the message msgIndexes selects
// (Confluent's message-index framing: indexes into the file's top-level
// messages, then into the nested ones; none means the first message). An
// id this broker's view has not applied yet is looked for again after a
// catch-up (as SubjectHasID). ErrNotFound for an unknown id,
// ErrNoRecordName when the schema names none.
func (r *Registry) RecordName(ctx context.Context, id int, msgIndexes []int) (string, error) {
	if err := r.load(ctx); err != nil {
		return "", err
	}
	p, err := r.parsedByID(id)
	if errors.Is(err, ErrNotFound) {
		if err := r.catchUp(ctx); err != nil {
			return "", err
		}
		p, err = r.parsedByID(id)
	}
	if err != nil {
		return "", err
	}
	return recordName(p, msgIndexes)
}

// SchemaType returns the type (AVRO, PROTOBUF, JSON) of the schema
// registered with id, catching up once as RecordName.
func (r *Registry) SchemaType(ctx context.Context, id int) (string, error) {
	if err := r.load(ctx); err != nil {
		return "", err
	}
	for caughtUp := false; ; caughtUp = true {
		r.view.mu.RLock()
		is := r.view.ids[id]
		r.view.mu.RUnlock()
		if is != nil {
			return schemaTypeOf(is.schema), nil
		}
		if caughtUp {
			return "", ErrNotFound
		}
		if err := r.catchUp(ctx); err != nil {
			return "", err
		}
	}
}

func (r *Registry) parsedByID(id int) (*parsedSchema, error) {
	r.view.mu.RLock()
	defer r.view.mu.RUnlock()
	is := r.view.ids[id]
	if is == nil {
		return nil, ErrNotFound
	}
	return r.parsedLocked(is.schema)
}

func recordName(p *parsedSchema, msgIndexes []int) (string, error) {
	switch p.typ {
	case typeAvro:
		if n, ok := p.avro.(avro.NamedSchema); ok {
			return n.FullName(), nil
		}
		return string(p.avro.Type()), nil
	case typeJSON:
		doc, _ := p.doc.(map[string]any)
		if t, ok := doc["title"].(string); ok && t != "" {
			return t, nil
		}
		return "", fmt.Errorf("%w: a JSON Schema without a \"title\"", ErrNoRecordName)
	case typeProtobuf:
		if len(p.proto) == 0 {
			return "", ErrNoRecordName
		}
		msgs := p.proto[0].Messages()
		if len(msgIndexes) == 0 {
			msgIndexes = []int{0}
		}
		var m protoreflect.MessageDescriptor
		for _, i := range msgIndexes {
			if i < 0 || i >= msgs.Len() {
				return "", fmt.Errorf("%w: message index %v names no message", ErrNoRecordName, msgIndexes)
			}
			m = msgs.Get(i)
			msgs = m.Messages()
		}
		return string(m.FullName()), nil
	}
	return "", ErrNoRecordName
}
