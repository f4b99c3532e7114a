package schemareg

// The records of the _schemas topic, byte-compatible with Confluent Schema
// Registry's KafkaStore (core/.../storage/SchemaKey.java, ConfigKey.java,
// ModeKey.java, DeleteSubjectKey.java, ClearSubjectKey.java, NoopKey.java
// and their *Value classes), so that a Confluent registry can read a topic
// Sluice wrote and the other way round. Part of the on-disk format: do not
// change the field names or their order.
//
// Keys are JSON objects, fields in this order (Jackson's
// @JsonPropertyOrder; subject and version are left out when empty):
//
//	SCHEMA          {"keytype":"SCHEMA","subject":"s","version":1,"magic":1}
//	CONFIG          {"keytype":"CONFIG","subject":"s","magic":0}    (no subject: global)
//	MODE            {"keytype":"MODE","subject":"s","magic":0}      (no subject: global)
//	DELETE_SUBJECT  {"keytype":"DELETE_SUBJECT","subject":"s","magic":0}
//	CLEAR_SUBJECT   {"keytype":"CLEAR_SUBJECT","subject":"s","magic":0}
//	NOOP            {"keytype":"NOOP","magic":0}
//
// Values:
//
//	SCHEMA          {"subject":"s","version":1,"id":1,"schemaType":"PROTOBUF",
//	                 "references":[{"name":..,"subject":..,"version":..}],
//	                 "schema":"...","deleted":false}   (schemaType absent: AVRO)
//	CONFIG          {"compatibilityLevel":"BACKWARD"}  (plus "subject", "normalize")
//	MODE            {"mode":"READONLY"}                (plus "subject")
//	DELETE_SUBJECT  {"subject":"s","version":3}  every version <= 3 is soft-deleted
//	CLEAR_SUBJECT   {"subject":"s"}
//
// A null value (tombstone) removes the key: a permanently deleted version,
// a subject's config or mode reset to the global one. Key types this
// package does not know (CONTEXT, KEK, DEK, ...) are skipped on replay.

import (
	"encoding/json"
	"fmt"
)

// Key types (SchemaRegistryKeyType.java). Part of the on-disk format.
const (
	keySchema        = "SCHEMA"
	keyConfig        = "CONFIG"
	keyMode          = "MODE"
	keyNoop          = "NOOP"
	keyDeleteSubject = "DELETE_SUBJECT"
	keyClearSubject  = "CLEAR_SUBJECT"
)

// storeKey is a _schemas record key. Field order is the format's.
type storeKey struct {
	KeyType string `json:"keytype"`
	Subject string `json:"subject,omitempty"`
	Version int    `json:"version,omitempty"`
	Magic   int    `json:"magic"`
}

// Reference is a schema reference: the name the referring schema uses for
// it (an Avro full name, a .proto import path, a JSON Schema $ref URL) and
// the subject and version that hold it.
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// schemaValue is the value of a SCHEMA key.
type schemaValue struct {
	Subject    string      `json:"subject"`
	Version    int         `json:"version"`
	ID         int         `json:"id"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	Schema     string      `json:"schema"`
	Deleted    bool        `json:"deleted"`
}

// configValue is the value of a CONFIG key.
type configValue struct {
	Subject            string `json:"subject,omitempty"`
	Normalize          *bool  `json:"normalize,omitempty"`
	CompatibilityLevel string `json:"compatibilityLevel,omitempty"`
}

// modeValue is the value of a MODE key.
type modeValue struct {
	Subject string `json:"subject,omitempty"`
	Mode    string `json:"mode"`
}

// deleteSubjectValue is the value of a DELETE_SUBJECT key.
type deleteSubjectValue struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// clearSubjectValue is the value of a CLEAR_SUBJECT key.
type clearSubjectValue struct {
	Subject string `json:"subject"`
}

func schemaKey(subject string, version int) storeKey {
	return storeKey{KeyType: keySchema, Subject: subject, Version: version, Magic: 1}
}

func configKey(subject string) storeKey {
	return storeKey{KeyType: keyConfig, Subject: subject}
}

func modeKey(subject string) storeKey {
	return storeKey{KeyType: keyMode, Subject: subject}
}

func deleteSubjectKey(subject string) storeKey {
	return storeKey{KeyType: keyDeleteSubject, Subject: subject}
}

// encodeKey returns k's record key bytes.
func encodeKey(k storeKey) []byte {
	b, err := json.Marshal(k)
	if err != nil { // a struct of strings and ints: cannot fail
		panic(fmt.Sprintf("schemareg: encode key: %v", err))
	}
	return b
}

// decodeKey parses a record key. Errors name what was wrong.
func decodeKey(b []byte) (storeKey, error) {
	var k storeKey
	if err := json.Unmarshal(b, &k); err != nil {
		return k, fmt.Errorf("schemareg: decode key %q: %w", truncate(b), err)
	}
	return k, nil
}

func truncate(b []byte) string {
	if len(b) > 120 {
		return string(b[:120]) + "..."
	}
	return string(b)
}
