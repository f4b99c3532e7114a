#!/usr/bin/python3
"""librdkafka's transactional producer through confluent-kafka-python: a
consume-transform-produce loop with send_offsets_to_transaction.

Usage: confluent_txn.py BOOTSTRAP INPUT OUTPUT GROUP TXN_ID N

Reads N records from INPUT as a member of GROUP (read_committed, no auto
commit). The first half is copied to OUTPUT in transactions of 50 records,
each committing the group's offsets with send_offsets_to_transaction; then a
transaction copies 50 more records and aborts; then the rest is copied and
committed. Prints one JSON line: {"ok": true, "committed": C, "aborted": A}
or {"ok": false, "error": "..."}.
"""
import json
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


def main():
    bootstrap, inp, out, group, txn_id, n = sys.argv[1:7]
    n = int(n)
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
    })
    producer = Producer({
        "bootstrap.servers": bootstrap,
        "transactional.id": txn_id,
        "transaction.timeout.ms": 30000,
    })
    producer.init_transactions(30)
    consumer.subscribe([inp])

    committed = aborted = 0
    batch = []
    deadline = time.time() + 60

    def copy(records, commit):
        producer.begin_transaction()
        for m in records:
            producer.produce(out, key=m.key(), value=b"copy-" + m.value())
        positions = [TopicPartition(m.topic(), m.partition(), m.offset() + 1) for m in records]
        # The last position per partition.
        last = {}
        for tp in positions:
            last[(tp.topic, tp.partition)] = tp
        producer.send_offsets_to_transaction(list(last.values()), consumer.consumer_group_metadata(), 30)
        if commit:
            producer.commit_transaction(30)
        else:
            # Delivered first, so that the aborted records are in the log
            # (abort_transaction purges what is still queued).
            producer.flush(30)
            producer.abort_transaction(30)

    seen = 0
    while seen < n and time.time() < deadline:
        m = consumer.poll(1.0)
        if m is None:
            continue
        if m.error():
            raise KafkaException(m.error())
        batch.append(m)
        seen += 1
        if len(batch) == 50:
            if seen > n // 2 and aborted == 0:
                copy(batch, False)
                aborted += len(batch)
                # Back to the last committed offsets: the aborted records
                # are copied again by the next transactions.
                for tp in consumer.committed(consumer.assignment(), 10):
                    consumer.seek(tp)
                seen -= len(batch)
            else:
                copy(batch, True)
                committed += len(batch)
            batch = []
    if batch:
        copy(batch, True)
        committed += len(batch)
    consumer.close()
    print(json.dumps({"ok": seen >= n, "committed": committed, "aborted": aborted,
                      "error": "" if seen >= n else "read %d of %d" % (seen, n)}))


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # the Go test reads the reason from the JSON line
        print(json.dumps({"ok": False, "error": repr(e)}))
        sys.exit(1)
