#!/usr/bin/python3
"""confluent-kafka-python's schema registry client against sluice's.

Run by e2e/schema_registry_python_test.go with Debian's /usr/bin/python3
(python3-confluent-kafka 1.7.0, python3-requests, python3-jsonschema,
python3-protobuf). Steps:

  1. The admin client creates --prefix-json and --prefix-proto with
     confluent.value.schema.validation=true (the broker checks each value's
     schema id against <topic>-value).
  2. SchemaRegistryClient registers a JSON Schema under a subject of its
     own, registers it again (same id), looks it up, reads it by id and the
     subject's latest version; sets FULL compatibility on the subject and
     tests a compatible and an incompatible schema against it.
  3. A SerializingProducer with JSONSerializer and one with
     ProtobufSerializer (sr_user_pb2, generated from sr_user.proto; the
     serializer registers the schema as a base64 FileDescriptorProto, as
     this client version does) produce --n records each through the
     broker, which validates the ids.
  4. DeserializingConsumers with JSONDeserializer and ProtobufDeserializer
     read them back; every record is checked.

Every loop is bounded (--timeout overall). The last line on stdout is a
JSON summary; any mismatch exits non-zero with "FAIL:" on stderr.
"""

import argparse
import json
import os
import sys
import threading

sys.dont_write_bytecode = True  # no __pycache__ beside sr_user_pb2.py
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import StringDeserializer, StringSerializer
from confluent_kafka import DeserializingConsumer, SerializingProducer

import sr_user_pb2

JSON_USER = json.dumps({
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "User",
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
})
# Adds an optional property: FULL compatible with JSON_USER.
JSON_USER_V2 = json.dumps({
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "User",
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "email": {"type": "string"}},
    "required": ["name", "age"],
})
# age becomes a string: compatible in no direction.
JSON_USER_BAD = json.dumps({
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "User",
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "string"}},
    "required": ["name", "age"],
})


def fail(msg):
    sys.stderr.write("FAIL: %s\n" % msg)
    sys.stderr.flush()
    os._exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--registry", required=True)
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--timeout", type=float, default=100)
    a = ap.parse_args()
    if not a.registry.startswith("http://127.0.0.1:"):
        fail("registry %s is not on 127.0.0.1" % a.registry)
    timer = threading.Timer(a.timeout, lambda: fail("did not finish within %ss" % a.timeout))
    timer.daemon = True
    timer.start()

    summary = {"ok": False, "produced": {}, "consumed": {}}
    topics = {"json": a.prefix + "-json", "proto": a.prefix + "-proto"}

    admin = AdminClient({"bootstrap.servers": a.brokers})
    futures = admin.create_topics([NewTopic(t, num_partitions=1, replication_factor=1,
                                            config={"confluent.value.schema.validation": "true"})
                                   for t in topics.values()], request_timeout=30)
    for t, f in futures.items():
        f.result(timeout=30)

    sr = SchemaRegistryClient({"url": a.registry})
    subject = a.prefix + "-api"
    sid = sr.register_schema(subject, Schema(JSON_USER, "JSON"))
    again = sr.register_schema(subject, Schema(JSON_USER, "JSON"))
    check(sid == again, "registered twice: ids %s and %s" % (sid, again))
    found = sr.lookup_schema(subject, Schema(JSON_USER, "JSON"))
    check(found.schema_id == sid and found.version == 1, "lookup: id %s version %s" % (found.schema_id, found.version))
    byid = sr.get_schema(sid)
    check(byid.schema_type == "JSON" and json.loads(byid.schema_str) == json.loads(JSON_USER), "schema %s by id: %s %s" % (sid, byid.schema_type, byid.schema_str))
    latest = sr.get_latest_version(subject)
    check(latest.schema_id == sid and latest.version == 1 and latest.subject == subject, "latest: %s" % vars(latest))
    # This client returns the answer's body: {"compatibility": "FULL"}.
    r = sr.set_compatibility(subject_name=subject, level="FULL")
    check(r.get("compatibility") == "FULL", "set FULL: %s" % r)
    check(sr.get_compatibility(subject_name=subject) == "FULL", "get FULL")
    check(sr.test_compatibility(subject, Schema(JSON_USER_V2, "JSON")) is True, "an added optional property is FULL compatible")
    check(sr.test_compatibility(subject, Schema(JSON_USER_BAD, "JSON")) is False, "a changed property type is not FULL compatible")
    try:
        sr.register_schema(subject, Schema(JSON_USER_BAD, "JSON"))
        fail("an incompatible schema was registered")
    except SchemaRegistryError as e:
        check(e.http_status_code == 409 and e.error_code == 409, "incompatible: %s %s" % (e.http_status_code, e.error_code))
    try:
        sr.get_schema(999999)
        fail("schema 999999 found")
    except SchemaRegistryError as e:
        check(e.http_status_code == 404 and e.error_code == 40403, "unknown id: %s %s" % (e.http_status_code, e.error_code))
    summary["apiSchemaId"] = sid

    serializers = {
        "json": JSONSerializer(JSON_USER, sr, to_dict=lambda u, ctx: u),
        "proto": ProtobufSerializer(sr_user_pb2.User, sr),
    }
    deserializers = {
        "json": JSONDeserializer(JSON_USER, from_dict=lambda d, ctx: d),
        "proto": ProtobufDeserializer(sr_user_pb2.User),
    }
    for fmt, topic in topics.items():
        errors = []

        def on_delivery(err, msg):
            if err is not None:
                errors.append(str(err))

        p = SerializingProducer({"bootstrap.servers": a.brokers, "acks": "all",
                                 "key.serializer": StringSerializer("utf_8"),
                                 "value.serializer": serializers[fmt]})
        for i in range(a.n):
            if fmt == "json":
                value = {"name": "user-%d" % i, "age": i}
            else:
                value = sr_user_pb2.User(name="user-%d" % i, age=i)
            p.produce(topic, key=str(i), value=value, on_delivery=on_delivery)
            p.poll(0)
        left = p.flush(30)
        check(left == 0 and not errors, "%s: %d undelivered, errors %s" % (topic, left, errors[:3]))
        summary["produced"][fmt] = a.n
        # The schema the serializer registered, under TopicNameStrategy.
        reg = sr.get_latest_version(topic + "-value")
        check(reg.schema.schema_type == ("JSON" if fmt == "json" else "PROTOBUF"), "%s-value: type %s" % (topic, reg.schema.schema_type))
        summary[fmt + "SchemaId"] = reg.schema_id

        c = DeserializingConsumer({"bootstrap.servers": a.brokers, "group.id": a.prefix + "-" + fmt,
                                   "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                   "key.deserializer": StringDeserializer("utf_8"),
                                   "value.deserializer": deserializers[fmt]})
        c.subscribe([topic])
        got = 0
        polls = 0
        while got < a.n:
            polls += 1
            check(polls < 2000, "%s: %d of %d records after %d polls" % (topic, got, a.n, polls))
            msg = c.poll(0.5)
            if msg is None:
                continue
            check(msg.error() is None, "%s: %s" % (topic, msg.error()))
            v = msg.value()
            if fmt == "json":
                name, age = v["name"], v["age"]
            else:
                name, age = v.name, v.age
            check(msg.key() == str(got) and name == "user-%d" % got and age == got,
                  "%s: record %d is key %s value %s/%s" % (topic, got, msg.key(), name, age))
            got += 1
        c.close()
        summary["consumed"][fmt] = got

    # A value without the framing: the broker refuses it.
    plain = SerializingProducer({"bootstrap.servers": a.brokers, "acks": "all", "message.send.max.retries": 0,
                                 "value.serializer": StringSerializer("utf_8")})
    refused = []
    plain.produce(topics["json"], value=json.dumps({"name": "x", "age": 1}),
                  on_delivery=lambda err, msg: refused.append(err.name() if err else "delivered"))
    plain.flush(30)
    check(refused == ["INVALID_RECORD"], "an unframed value: %s, want INVALID_RECORD" % refused)
    summary["unframed"] = refused[0]

    summary["ok"] = True
    print(json.dumps(summary, sort_keys=True))
    sys.stdout.flush()
    timer.cancel()


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - every failure is reported as FAIL
        import traceback
        traceback.print_exc()
        fail("%s: %s" % (type(e).__name__, e))
