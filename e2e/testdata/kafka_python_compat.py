#!/usr/bin/python3
"""End-to-end compatibility check of kafka-python (2.0.x) against a broker.

Run by e2e/compat_python_test.go with Debian's /usr/bin/python3 (which has
python3-kafka). It drives the paths kafka-python really uses: ApiVersions v0
probing (unless --api-version pins a version), Metadata v0/v1, Produce v3+,
Fetch v4, ListOffsets v1 and the classic consumer-group protocol
(FindCoordinator, JoinGroup, SyncGroup, Heartbeat, OffsetCommit v2,
OffsetFetch, LeaveGroup), plus the admin client (CreateTopics, ListGroups,
DescribeGroups, OffsetFetch).

Steps:
  1. KafkaAdminClient creates --topic with --partitions partitions.
  2. KafkaProducer (acks=all, --compression) sends --n keyed messages with
     headers, waits for every future and records each (partition, offset).
  3. KafkaConsumer in --group (earliest, no auto commit) consumes until all
     --n are seen, checks every key/value/header, per-partition order, that
     no message comes twice and that each sits where its ack said, commits
     synchronously, reads the commit back and closes (LeaveGroup).
  4. The producer sends --m more; a second consumer in the same group resumes
     from the committed offsets and must get exactly those --m.
  5. The admin client lists the group and its committed offsets.

Every loop is bounded in count and time (--timeout overall). The last line on
stdout is a JSON summary; any mismatch exits non-zero with a message on
stderr starting with "FAIL:".
"""

import argparse
import collections
import json
import logging
import sys
import threading
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
import kafka
import kafka.conn

# Every request kafka-python writes, by class name ("FetchRequest_v4"), so
# the summary shows which versions really went over the wire.
SENT = collections.Counter()
_sent_lock = threading.Lock()
_orig_send = kafka.conn.BrokerConnection._send


def _counting_send(self, request, *args, **kwargs):
    with _sent_lock:
        SENT[type(request).__name__] += 1
    return _orig_send(self, request, *args, **kwargs)


kafka.conn.BrokerConnection._send = _counting_send

# Request classes every run must have sent (any version), by name prefix.
REQUIRED = [
    "MetadataRequest", "CreateTopicsRequest", "ProduceRequest", "FetchRequest_v4",
    "OffsetRequest_v1",  # ListOffsets
    "GroupCoordinatorRequest",  # FindCoordinator
    "JoinGroupRequest", "SyncGroupRequest", "HeartbeatRequest",
    "OffsetCommitRequest_v2", "OffsetFetchRequest", "LeaveGroupRequest",
    "ListGroupsRequest", "DescribeGroupsRequest",
]
# Sent only when kafka-python probes the broker version (no api_version).
REQUIRED_PROBING = ["ApiVersionRequest_v0", "MetadataRequest_v0"]


class Failure(Exception):
    pass


def fail(msg):
    raise Failure(msg)


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--n", type=int, default=3000)
    p.add_argument("--m", type=int, default=500)
    p.add_argument("--partitions", type=int, default=3)
    p.add_argument("--compression", default="none", choices=["none", "gzip"])
    p.add_argument("--api-version", default="auto",
                   help='"auto" (probe with ApiVersions) or a pinned version such as 0.11')
    p.add_argument("--timeout", type=float, default=90.0,
                   help="overall time limit in seconds")
    return p.parse_args()


def key_of(i):
    return b"key-%06d" % i


def value_of(i, variant):
    return b"value-%06d-%s" % (i, variant.encode())


def headers_of(i, variant):
    return [("idx", b"%d" % i), ("variant", variant.encode()), ("empty", b"")]


class Run:
    def __init__(self, args):
        self.args = args
        self.start = time.monotonic()
        self.deadline = self.start + args.timeout
        if args.api_version == "auto":
            self.api_version = None
        else:
            self.api_version = tuple(int(x) for x in args.api_version.split("."))
        self.variant = "%s-%s" % (args.compression, args.api_version)
        # key index -> (partition, offset) as acknowledged by the producer
        self.acked = {}
        self.summary = {
            "kafka_python": kafka.__version__,
            "variant": self.variant,
            "topic": args.topic,
            "group": args.group,
        }

    def remaining(self, cap):
        left = self.deadline - time.monotonic()
        if left <= 0:
            fail("overall time limit of %.0fs exceeded" % self.args.timeout)
        return min(cap, left)

    def common(self):
        c = {"bootstrap_servers": [self.args.bootstrap], "request_timeout_ms": 30000}
        if self.api_version is not None:
            c["api_version"] = self.api_version
        return c

    # 1. topic creation with the admin client
    def create_topic(self):
        # The admin client always probes: with a pinned api_version it has no
        # ApiVersions data to pick request versions from.
        admin = KafkaAdminClient(bootstrap_servers=[self.args.bootstrap],
                                 request_timeout_ms=30000, client_id="compat-admin")
        try:
            resp = admin.create_topics(
                [NewTopic(self.args.topic, num_partitions=self.args.partitions, replication_factor=1)],
                timeout_ms=15000)
            errs = [(t[0], t[1]) for t in resp.topic_errors if t[1] != 0]
            if errs:
                fail("CreateTopics answered errors %r (full response %r)" % (errs, resp))
            self.summary["create_topics_version"] = resp.API_VERSION
            self.summary["admin_probed_api_version"] = list(admin.config["api_version"])
        finally:
            admin.close()

    def make_producer(self):
        cfg = self.common()
        cfg.update(acks="all", linger_ms=5, retries=0, client_id="compat-producer",
                   max_in_flight_requests_per_connection=1)
        if self.args.compression != "none":
            cfg["compression_type"] = self.args.compression
        p = KafkaProducer(**cfg)
        ver = tuple(p.config["api_version"])
        self.summary["producer_api_version"] = list(ver)
        # kafka-python compares with 3-tuples: (0, 11) < (0, 11, 0), and with
        # (0, 11) it sends Fetch v3, which a v2-only broker does not serve.
        if ver < (0, 11, 0):
            fail("api_version %r is below (0, 11, 0): kafka-python would send Produce < v3 "
                 "or Fetch < v4 (message format < v2), which the broker does not serve" % (ver,))
        # The topic must show all its partitions in Metadata.
        parts = None
        for _ in range(100):
            parts = p.partitions_for(self.args.topic)
            if parts and len(parts) == self.args.partitions:
                break
            time.sleep(self.remaining(0.1))
        if not parts or sorted(parts) != list(range(self.args.partitions)):
            fail("producer metadata shows partitions %r for %s, want 0..%d"
                 % (parts, self.args.topic, self.args.partitions - 1))
        return p

    # 2. and 4. producing
    def produce(self, producer, lo, hi):
        futures = []
        for i in range(lo, hi):
            futures.append((i, producer.send(self.args.topic, key=key_of(i),
                                             value=value_of(i, self.variant),
                                             headers=headers_of(i, self.variant))))
        producer.flush(timeout=self.remaining(60))
        for i, f in futures:
            try:
                md = f.get(timeout=self.remaining(30))
            except Exception as e:  # noqa: BLE001 - report any client error
                fail("send of message %d failed: %r" % (i, e))
            if md.topic != self.args.topic:
                fail("message %d acked for topic %r" % (i, md.topic))
            self.acked[i] = (md.partition, md.offset)
        # Offsets per partition must be dense and follow what was there.
        per = {}
        for i in range(lo, hi):
            part, off = self.acked[i]
            per.setdefault(part, []).append(off)
        for part, offs in per.items():
            if len(set(offs)) != len(offs):
                fail("partition %d: the same offset acknowledged twice" % part)
            prev_max = max([o for j, (pp, o) in self.acked.items() if j < lo and pp == part], default=-1)
            if sorted(offs) != list(range(prev_max + 1, prev_max + 1 + len(offs))):
                fail("partition %d: acknowledged offsets are not dense after %d: %r..."
                     % (part, prev_max, sorted(offs)[:10]))
        return {str(p): len(o) for p, o in sorted(per.items())}

    def make_consumer(self, name):
        cfg = self.common()
        cfg.update(group_id=self.args.group, client_id=name,
                   auto_offset_reset="earliest", enable_auto_commit=False,
                   session_timeout_ms=10000, heartbeat_interval_ms=500,
                   max_poll_records=250)
        self.consumer_started = time.time()
        c = KafkaConsumer(**cfg)
        c.subscribe([self.args.topic])
        return c

    # 3. and 4. consuming: exactly the indexes in want, nothing else
    def consume(self, consumer, want, label):
        seen = set()
        last = {}
        polls = 0
        while len(seen) < len(want):
            polls += 1
            if polls > 5000:
                fail("%s: %d polls and only %d of %d messages" % (label, polls - 1, len(seen), len(want)))
            if time.monotonic() > self.deadline:
                fail("%s: time limit with %d of %d messages (assignment %r)"
                     % (label, len(seen), len(want), consumer.assignment()))
            batch = consumer.poll(timeout_ms=int(self.remaining(1.0) * 1000))
            for tp, records in batch.items():
                for r in records:
                    self.check_record(label, r, want, seen, last)
        # Nothing more may come: poll a little longer, at least 1.5 s and
        # until the background thread has had a Heartbeat answered (the
        # consumer kept its membership: no rejoin since it started).
        joined = consumer.assignment()
        hb = consumer._coordinator.heartbeat  # kafka-python 2.0.x internals
        start = time.monotonic()
        while True:
            now = time.monotonic()
            if now - start >= 1.5 and hb.last_receive >= self.consumer_started:
                break
            if now - start > 15:
                fail("%s: no Heartbeat answered within 15 s (last sent %r, last received %r)"
                     % (label, hb.last_send, hb.last_receive))
            batch = consumer.poll(timeout_ms=int(self.remaining(0.3) * 1000))
            for tp, records in batch.items():
                for r in records:
                    fail("%s: extra message after all were seen: partition %d offset %d key %r"
                         % (label, r.partition, r.offset, r.key))
        if consumer.assignment() != joined:
            fail("%s: assignment changed from %r to %r while idle" % (label, joined, consumer.assignment()))
        want_tps = {TopicPartition(self.args.topic, p) for p in range(self.args.partitions)}
        if joined != want_tps:
            fail("%s: assigned %r, want all of %r" % (label, joined, want_tps))
        return polls

    def check_record(self, label, r, want, seen, last):
        if r.topic != self.args.topic:
            fail("%s: record from topic %r" % (label, r.topic))
        if r.key is None or not r.key.startswith(b"key-"):
            fail("%s: bad key %r at %d/%d" % (label, r.key, r.partition, r.offset))
        i = int(r.key[4:])
        where = "%s: key %r at partition %d offset %d" % (label, r.key, r.partition, r.offset)
        if i not in want:
            fail("%s was not expected here (already consumed and committed, or never produced)" % where)
        if i in seen:
            fail("%s consumed twice" % where)
        if self.acked.get(i) != (r.partition, r.offset):
            fail("%s was acknowledged at %r" % (where, self.acked.get(i)))
        if r.value != value_of(i, self.variant):
            fail("%s has value %r" % (where, r.value))
        hdrs = [(k, bytes(v) if v is not None else None) for k, v in r.headers]
        if hdrs != headers_of(i, self.variant):
            fail("%s has headers %r" % (where, hdrs))
        if r.partition in last and r.offset <= last[r.partition]:
            fail("%s came after offset %d" % (where, last[r.partition]))
        if r.timestamp is None or r.timestamp <= 0:
            fail("%s has timestamp %r" % (where, r.timestamp))
        last[r.partition] = r.offset
        seen.add(i)

    def end_offsets(self):
        want = {}
        for i, (part, off) in self.acked.items():
            want[part] = max(want.get(part, 0), off + 1)
        return want

    def commit_and_check(self, consumer, label):
        consumer.commit()  # synchronous OffsetCommit of the consumed positions
        want = self.end_offsets()
        tps = [TopicPartition(self.args.topic, p) for p in range(self.args.partitions)]
        got = {}
        for tp in tps:
            got[tp.partition] = consumer.committed(tp)  # OffsetFetch
        for p in range(self.args.partitions):
            if got[p] != want.get(p, 0) and not (got[p] is None and want.get(p, 0) == 0):
                fail("%s: committed offsets %r, want %r" % (label, got, want))
        ends = consumer.end_offsets(tps)  # ListOffsets
        begins = consumer.beginning_offsets(tps)
        for tp in tps:
            if ends[tp] != want.get(tp.partition, 0):
                fail("%s: end offsets %r, want %r" % (label, ends, want))
            if begins[tp] != 0:
                fail("%s: beginning offsets %r, want 0" % (label, begins))
        return {str(p): o for p, o in sorted(got.items())}

    def check_group_with_admin(self):
        admin = KafkaAdminClient(bootstrap_servers=[self.args.bootstrap],
                                 request_timeout_ms=30000, client_id="compat-admin")
        try:
            groups = admin.list_consumer_groups()  # ListGroups
            names = [g[0] for g in groups]
            if self.args.group not in names:
                fail("ListGroups lacks %r: %r" % (self.args.group, groups))
            desc = admin.describe_consumer_groups([self.args.group])  # DescribeGroups
            if not desc or desc[0].group != self.args.group or desc[0].error_code != 0:
                fail("DescribeGroups answered %r" % (desc,))
            # Both consumers left the group on close (LeaveGroup).
            if desc[0].members:
                fail("group still has members after both consumers closed: %r" % (desc[0].members,))
            offsets = admin.list_consumer_group_offsets(self.args.group)  # OffsetFetch
            got = {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == self.args.topic}
            want = self.end_offsets()
            if got != want:
                fail("admin OffsetFetch for the group: %r, want %r" % (got, want))
            self.summary["group_state"] = desc[0].state
        finally:
            admin.close()

    def check_sent(self):
        with _sent_lock:
            sent = dict(SENT)
        self.summary["requests"] = sent
        required = REQUIRED + (REQUIRED_PROBING if self.api_version is None else [])
        missing = [r for r in required if not any(name.startswith(r) for name in sent)]
        if missing:
            fail("kafka-python never sent %r (sent %r)" % (missing, sent))
        produce = [n for n in sent if n.startswith("ProduceRequest_v")]
        if any(int(n.rsplit("v", 1)[1]) < 3 for n in produce):
            fail("kafka-python sent Produce below v3: %r" % produce)

    def main(self):
        a = self.args
        self.create_topic()
        producer = self.make_producer()
        try:
            self.summary["produced_first"] = self.produce(producer, 0, a.n)

            c1 = self.make_consumer("compat-consumer-1")
            try:
                self.summary["consumer_api_version"] = list(c1.config["api_version"])
                self.summary["polls_first"] = self.consume(c1, set(range(a.n)), "consumer 1")
                self.summary["committed_first"] = self.commit_and_check(c1, "consumer 1")
            finally:
                c1.close()  # LeaveGroup

            self.summary["produced_second"] = self.produce(producer, a.n, a.n + a.m)
        finally:
            producer.close(timeout=self.remaining(30))

        c2 = self.make_consumer("compat-consumer-2")
        try:
            self.summary["polls_second"] = self.consume(c2, set(range(a.n, a.n + a.m)), "consumer 2")
            self.summary["committed_second"] = self.commit_and_check(c2, "consumer 2")
        finally:
            c2.close()

        self.check_group_with_admin()
        self.check_sent()
        self.summary["consumed"] = a.n + a.m
        self.summary["elapsed_s"] = round(time.monotonic() - self.start, 2)
        self.summary["ok"] = True


def main():
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args = parse_args()
    r = Run(args)
    try:
        r.main()
    except Failure as e:
        print("FAIL: [%s] %s" % (r.variant, e), file=sys.stderr)
        r.summary["ok"] = False
        r.summary["error"] = str(e)
        print(json.dumps(r.summary, sort_keys=True))
        return 1
    except Exception as e:  # noqa: BLE001 - a client error is a failure too
        import traceback
        traceback.print_exc()
        print("FAIL: [%s] unexpected %s: %s" % (r.variant, type(e).__name__, e), file=sys.stderr)
        r.summary["ok"] = False
        r.summary["error"] = "%s: %s" % (type(e).__name__, e)
        print(json.dumps(r.summary, sort_keys=True))
        return 1
    print(json.dumps(r.summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
