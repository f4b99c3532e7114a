package server

// Broker-side schema validation (README, "Schema registry"), Confluent
// Server's topic configs confluent.key.schema.validation and
// confluent.value.schema.validation: when on, every record of a produced
// batch must carry, in its key or value, Confluent's wire framing (magic
// byte 0, a big-endian 4-byte schema id) with an id registered under the
// topic's subject (TopicNameStrategy: <topic>-key, <topic>-value; the
// other strategies are INVALID_CONFIG, config/topickeys.go). A record
// that does not is INVALID_RECORD for its partition, the record named in
// the message and, from Produce v8, in the partition's record errors.
//
// Cost: a topic with validation off pays one boolean test per partition.
// One with it on walks its records once (record.Iter from a pool, which
// decompresses a compressed batch into a buffer it keeps) and looks each
// (topic, id) pair up in a cache of pairs already found registered; only
// a miss asks the registry (SchemaSubjects), which is in-process.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/record"
)

// SchemaSubjects is what schema validation needs of the schema registry
// (the broker adapts schemareg.Registry to it, so that server does not
// import schemareg).
type SchemaSubjects interface {
	// SubjectHasID reports whether id is the schema id of a live (not
	// deleted) version of subject. An error means the registry cannot
	// tell (not running, its view not loaded).
	SubjectHasID(ctx context.Context, subject string, id int) (bool, error)
}

// errSchemaValidation is a record refused by schema validation
// (INVALID_RECORD, errcode through record.ErrInvalid).
var errSchemaValidation = fmt.Errorf("%w: schema validation", record.ErrInvalid)

// schemaCacheMax bounds the cache of registered (topic, id) pairs; when
// full it is emptied and refilled from the registry.
const schemaCacheMax = 1 << 16

type schemaKey struct {
	topic string
	key   bool // the key subject, else the value subject
	id    int32
}

// schemaCheck is the server's schema validation: the registry and the
// pairs found registered. A pair once found stays accepted until the cache
// is emptied (a schema version deleted afterwards is still accepted for
// that topic until then).
type schemaCheck struct {
	reg   SchemaSubjects
	mu    sync.RWMutex
	known map[schemaKey]struct{}
}

var iterPool = sync.Pool{New: func() any { return new(record.Iter) }}

// schemaRecordError is one refused record: its index in the partition's
// records (counted across its batches) and why.
type schemaRecordError struct {
	index int32
	msg   string
}

func (e *schemaRecordError) Error() string { return e.msg }
func (e *schemaRecordError) Unwrap() error { return errSchemaValidation }

// validate checks the records of one partition's batches for topic. It
// returns nil when they pass, and also when a batch does not parse: the
// append's own validation then answers with the right error.
// maxDecompressed bounds what one compressed batch may decompress to
// (the topic's record.Rules.MaxDecompressed).
func (c *schemaCheck) validate(ctx context.Context, topic string, checkKey, checkValue bool, maxDecompressed int64, batches []byte) error {
	it := iterPool.Get().(*record.Iter)
	defer iterPool.Put(it)
	var index int32
	lastKey, lastValue := int32(-1), int32(-1) // the ids last found good in this request
	for pos := 0; pos+record.HeaderSize <= len(batches); {
		b := record.Batch(batches[pos:])
		size := b.Size()
		if size < record.HeaderSize || size > len(batches)-pos {
			return nil
		}
		b = b[:size]
		pos += size
		if b.Control() {
			continue
		}
		// Bounded as the append's own walk: a decompression bomb stops
		// here, and the append then refuses it.
		it.ResetLimit(b, maxDecompressed)
		for it.Next() {
			r := it.Record()
			if checkKey {
				if err := c.check(ctx, topic, true, r.Key, &lastKey, index); err != nil {
					return err
				}
			}
			if checkValue {
				if err := c.check(ctx, topic, false, r.Value, &lastValue, index); err != nil {
					return err
				}
			}
			index++
		}
		if it.Err() != nil {
			return nil
		}
	}
	return nil
}

// check checks one key or value; last is the id last found good for it.
func (c *schemaCheck) check(ctx context.Context, topic string, isKey bool, b []byte, last *int32, index int32) error {
	if len(b) < 5 || b[0] != 0 {
		return c.refuse(topic, isKey, index, "does not start with magic byte 0 and a 4-byte schema id")
	}
	id := int32(binary.BigEndian.Uint32(b[1:5]))
	if id == *last {
		return nil
	}
	k := schemaKey{topic, isKey, id}
	c.mu.RLock()
	_, ok := c.known[k]
	c.mu.RUnlock()
	if !ok {
		if c.reg == nil {
			return c.refuse(topic, isKey, index, "cannot be checked: the schema registry is not running (schema.registry.listeners)")
		}
		subject := subjectName(topic, isKey)
		found, err := c.reg.SubjectHasID(ctx, subject, int(id))
		if err != nil {
			return c.refuse(topic, isKey, index, fmt.Sprintf("cannot be checked: schema registry: %v", err))
		}
		if !found {
			return c.refuse(topic, isKey, index, fmt.Sprintf("has schema id %d, which is not registered under subject %s", id, subject))
		}
		c.mu.Lock()
		if c.known == nil || len(c.known) >= schemaCacheMax {
			c.known = make(map[schemaKey]struct{})
		}
		c.known[k] = struct{}{}
		c.mu.Unlock()
	}
	*last = id
	return nil
}

func subjectName(topic string, isKey bool) string {
	if isKey {
		return topic + "-key"
	}
	return topic + "-value"
}

func (c *schemaCheck) refuse(topic string, isKey bool, index int32, why string) error {
	part := "value"
	if isKey {
		part = "key"
	}
	return &schemaRecordError{index: index, msg: fmt.Sprintf("record %d (batch index) of topic %s: its %s %s", index, topic, part, why)}
}

// fillSchemaError answers a partition refused by schema validation:
// INVALID_RECORD, the message, and the record in the record errors (v8+,
// where the field exists; kmsg leaves it out of older versions).
func (s *Server) fillSchemaError(sp *kmsg.ProduceResponseTopicPartition, topic string, err error) {
	s.fillProduceError(sp, topic, err)
	var re *schemaRecordError
	if errors.As(err, &re) {
		msg := re.msg
		sp.ErrorRecords = append(sp.ErrorRecords, kmsg.ProduceResponseTopicPartitionErrorRecord{RelativeOffset: re.index, ErrorMessage: &msg})
	}
}
