package server

// Broker-side schema validation (README, "Schema registry"), Confluent
// Server's topic configs confluent.key.schema.validation and
// confluent.value.schema.validation: when on, every record of a produced
// batch must carry, in its key or value, Confluent's wire framing (magic
// byte 0, a big-endian 4-byte schema id) with an id registered under the
// record's subject, which confluent.{key,value}.subject.name.strategy
// names as Confluent's serializers do: TopicNameStrategy (the default)
// <topic>-key or <topic>-value; RecordNameStrategy the record name of the
// schema the id names (Avro's full name, JSON Schema's title, Protobuf's
// message that the record's message indexes select); TopicRecordNameStrategy
// <topic>-<record name>. A record
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
	"math"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/config"
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
	// SchemaType returns the type (AVRO, PROTOBUF, JSON) of the schema
	// registered with id; an error for an unknown id.
	SchemaType(ctx context.Context, id int) (string, error)
	// RecordName returns the record name of the schema registered with
	// id (Protobuf: of the message msgIndexes selects, Confluent's
	// message-index framing); an error when it has none.
	RecordName(ctx context.Context, id int, msgIndexes []int) (string, error)
}

// subjectStrategy is how one side (key or value) of a topic's records is
// validated: not at all, or under the subject a strategy names.
type subjectStrategy uint8

const (
	strategyOff         subjectStrategy = iota
	strategyTopic                       // TopicNameStrategy: <topic>-key, <topic>-value
	strategyRecord                      // RecordNameStrategy: <record name>
	strategyTopicRecord                 // TopicRecordNameStrategy: <topic>-<record name>
)

// schemaStrategy is a topic's strategy for one side: strategyOff unless
// on, else the one its confluent.*.subject.name.strategy names (checked
// by config/topickeys.go; anything else is the default).
func schemaStrategy(on bool, name string) subjectStrategy {
	switch {
	case !on:
		return strategyOff
	case name == config.RecordNameStrategy:
		return strategyRecord
	case name == config.TopicRecordNameStrategy:
		return strategyTopicRecord
	}
	return strategyTopic
}

// errSchemaValidation is a record refused by schema validation
// (INVALID_RECORD, errcode through record.ErrInvalid).
var errSchemaValidation = fmt.Errorf("%w: schema validation", record.ErrInvalid)

// schemaCacheMax bounds the cache of registered (topic, id) pairs; when
// full it is emptied and refilled from the registry.
const schemaCacheMax = 1 << 16

type schemaKey struct {
	topic    string
	key      bool // the key subject, else the value subject
	strategy subjectStrategy
	id       int32
	// msg is, for a Protobuf schema under a record strategy, the record's
	// message-index framing packed (protoIndexKey); else 0.
	msg uint64
}

// schemaCheck is the server's schema validation: the registry and the
// pairs found registered. A pair once found stays accepted until the cache
// is emptied (a schema version deleted afterwards is still accepted for
// that topic until then).
type schemaCheck struct {
	reg   SchemaSubjects
	mu    sync.RWMutex
	known map[schemaKey]struct{}
	// proto caches, for the record strategies, whether an id names a
	// Protobuf schema (whose records carry message indexes after the id).
	// An id's schema never changes.
	proto map[int32]bool
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
func (c *schemaCheck) validate(ctx context.Context, topic string, keys, values subjectStrategy, maxDecompressed int64, batches []byte) error {
	it := iterPool.Get().(*record.Iter)
	defer iterPool.Put(it)
	var index int32
	var lastKey, lastValue schemaLast // the ids last found good in this request
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
			if keys != strategyOff {
				if err := c.check(ctx, topic, true, keys, r.Key, &lastKey, index); err != nil {
					return err
				}
			}
			if values != strategyOff {
				if err := c.check(ctx, topic, false, values, r.Value, &lastValue, index); err != nil {
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

// schemaLast is the id (and message framing) last found good for one side
// of a request's records: the common case, every record with one schema,
// skips the cache.
type schemaLast struct {
	ok  bool
	id  int32
	msg uint64
}

// check checks one key or value under strategy; last is what was last
// found good for that side.
func (c *schemaCheck) check(ctx context.Context, topic string, isKey bool, strategy subjectStrategy, b []byte, last *schemaLast, index int32) error {
	if len(b) < 5 || b[0] != 0 {
		return c.refuse(topic, isKey, index, "does not start with magic byte 0 and a 4-byte schema id")
	}
	id := int32(binary.BigEndian.Uint32(b[1:5]))
	k := schemaKey{topic: topic, key: isKey, strategy: strategy, id: id}
	cacheable := true
	var framing []byte // Protobuf's message indexes, under a record strategy
	if strategy == strategyRecord || strategy == strategyTopicRecord {
		isProto, err := c.isProto(ctx, id)
		if err != nil {
			return c.refuse(topic, isKey, index, fmt.Sprintf("has schema id %d: %v", id, err))
		}
		if isProto {
			n, err := protoMessageIndexes(b[5:], nil)
			if err != nil {
				return c.refuse(topic, isKey, index, fmt.Sprintf("has schema id %d of a Protobuf schema and %v", id, err))
			}
			framing = b[5 : 5+n]
			k.msg, cacheable = protoIndexKey(framing)
		}
	}
	if cacheable && last.ok && last.id == id && last.msg == k.msg {
		return nil
	}
	c.mu.RLock()
	_, ok := c.known[k]
	c.mu.RUnlock()
	if !ok || !cacheable {
		if c.reg == nil {
			return c.refuse(topic, isKey, index, "cannot be checked: the schema registry is not running (schema.registry.listeners)")
		}
		var msgIndexes []int
		if framing != nil {
			_, _ = protoMessageIndexes(framing, func(i int) { msgIndexes = append(msgIndexes, i) })
		}
		subject, err := c.subject(ctx, topic, isKey, strategy, id, msgIndexes)
		if err != nil {
			return c.refuse(topic, isKey, index, fmt.Sprintf("has schema id %d, which names no subject under %s: %v", id, strategyName(strategy), err))
		}
		found, err := c.reg.SubjectHasID(ctx, subject, int(id))
		if err != nil {
			return c.refuse(topic, isKey, index, fmt.Sprintf("cannot be checked: schema registry: %v", err))
		}
		if !found {
			return c.refuse(topic, isKey, index, fmt.Sprintf("has schema id %d, which is not registered under subject %s", id, subject))
		}
		if cacheable {
			c.mu.Lock()
			if c.known == nil || len(c.known) >= schemaCacheMax {
				c.known = make(map[schemaKey]struct{})
			}
			c.known[k] = struct{}{}
			c.mu.Unlock()
		}
	}
	*last = schemaLast{ok: cacheable, id: id, msg: k.msg}
	return nil
}

// subject is the subject a record with schema id must be registered
// under.
func (c *schemaCheck) subject(ctx context.Context, topic string, isKey bool, strategy subjectStrategy, id int32, msgIndexes []int) (string, error) {
	if strategy == strategyTopic {
		return subjectName(topic, isKey), nil
	}
	name, err := c.reg.RecordName(ctx, int(id), msgIndexes)
	if err != nil {
		return "", err
	}
	if strategy == strategyTopicRecord {
		return topic + "-" + name, nil
	}
	return name, nil
}

// isProto reports whether id names a Protobuf schema (cached).
func (c *schemaCheck) isProto(ctx context.Context, id int32) (bool, error) {
	c.mu.RLock()
	p, ok := c.proto[id]
	c.mu.RUnlock()
	if ok {
		return p, nil
	}
	if c.reg == nil {
		return false, errors.New("the schema registry is not running (schema.registry.listeners)")
	}
	typ, err := c.reg.SchemaType(ctx, int(id))
	if err != nil {
		return false, err
	}
	p = typ == "PROTOBUF"
	c.mu.Lock()
	if c.proto == nil || len(c.proto) >= schemaCacheMax {
		c.proto = make(map[int32]bool)
	}
	c.proto[id] = p
	c.mu.Unlock()
	return p, nil
}

// maxMessageIndexes bounds the message indexes a record may carry (the
// nesting depth of the message it names).
const maxMessageIndexes = 64

// protoMessageIndexes reads Confluent's Protobuf message-index framing at
// the start of b (after the magic byte and id): a zigzag varint count,
// then that many zigzag varint indexes; a count of 0 means the first
// message (each is handed to index, which may be nil; none for a count of
// 0). It returns the framing's length.
func protoMessageIndexes(b []byte, index func(int)) (int, error) {
	count, n := binary.Varint(b)
	if n <= 0 {
		return 0, errors.New("no message indexes")
	}
	if count < 0 || count > maxMessageIndexes {
		return 0, fmt.Errorf("%d message indexes (at most %d)", count, maxMessageIndexes)
	}
	for range count {
		v, m := binary.Varint(b[n:])
		if m <= 0 || v < 0 || v > math.MaxInt32 {
			return 0, errors.New("bad message indexes")
		}
		if index != nil {
			index(int(v))
		}
		n += m
	}
	return n, nil
}

// protoIndexKey packs a message-index framing of at most 7 bytes into a
// cache key (its length in the top byte, so that no two framings share
// one); longer framings are not cached.
func protoIndexKey(framing []byte) (uint64, bool) {
	if len(framing) > 7 {
		return 0, false
	}
	k := uint64(len(framing)) << 56
	for i, x := range framing {
		k |= uint64(x) << (8 * i)
	}
	return k, true
}

func strategyName(s subjectStrategy) string {
	switch s {
	case strategyRecord:
		return "RecordNameStrategy"
	case strategyTopicRecord:
		return "TopicRecordNameStrategy"
	}
	return "TopicNameStrategy"
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
