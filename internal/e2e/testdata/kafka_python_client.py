"""kafka-python against a Strata agent, for
internal/e2e/compact_clients_test.go and diskless_clients_test.go. Run
with Debian's /usr/bin/python3 (the Debian package python3-kafka).

argv[1] is a JSON object:
  bootstrap  host:port of a PLAINTEXT listener
  mode       "compacted": read a cleaned compacted topic as
             compact_clients_test.go describes, printing one line
             "<phase> <offset> <key> <value>" per record (NULL for null):
             A: group `group` reads from the start to offset `stop`,
             commits stop+1 and leaves; B: the group resumes and reads to
             offset end-1; S<i>: a consumer assigned at seeks[i] prints
             its first record.
  topic, group, stop, end, seeks   as above
  mode       "diskless": produce count records "<prefix>key-<i>" /
             "<prefix>value-<i>" to the existing topic with acks=all and
             kafka-python's defaults otherwise, waiting for each one's
             acknowledgement, then read the topic from the start in a
             fresh group `group` until total records are in, printing
             "<partition> <offset> <key> <value>" lines.
  topic, group, count, prefix, total   as above

Any client error ends the run with exit status 1 and one line on stderr,
"ERROR <exception name> <message>", which the Go test shows.
"""

import json
import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

TIMEOUT = 20.0  # seconds for each phase; the Go test bounds the whole run


def nullable(b):
    return "NULL" if b is None else b.decode()


def read_until(consumer, phase, last, lines):
    """Appends the records consumer hands out up to offset last."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500, max_records=1).values():
            for msg in records:
                lines.append("%s %d %s %s" % (phase, msg.offset, nullable(msg.key), nullable(msg.value)))
                if msg.offset >= last:
                    return
    raise RuntimeError("phase %s: no offset %d within %.0f s" % (phase, last, TIMEOUT))


def consumer(cfg, group):
    return KafkaConsumer(bootstrap_servers=cfg["bootstrap"], group_id=group, enable_auto_commit=False,
                         auto_offset_reset="earliest", consumer_timeout_ms=int(TIMEOUT * 1000),
                         request_timeout_ms=30000, session_timeout_ms=10000, heartbeat_interval_ms=500)


def compacted(cfg):
    topic, lines = cfg["topic"], []
    tp = TopicPartition(topic, 0)
    c = consumer(cfg, cfg["group"])
    c.subscribe([topic])
    read_until(c, "A", cfg["stop"], lines)
    c.commit({tp: OffsetAndMetadata(cfg["stop"] + 1, None)})
    c.close(autocommit=False)
    c = consumer(cfg, cfg["group"])
    c.subscribe([topic])
    read_until(c, "B", cfg["end"] - 1, lines)
    c.close(autocommit=False)
    for i, offset in enumerate(cfg["seeks"]):
        c = consumer(cfg, None)
        c.assign([tp])
        c.seek(tp, offset)
        read_until(c, "S%d" % i, offset, lines)
        c.close(autocommit=False)
    return lines


def diskless(cfg):
    topic, prefix = cfg["topic"], cfg["prefix"]
    producer = KafkaProducer(bootstrap_servers=cfg["bootstrap"], acks="all")
    futures = [producer.send(topic, key=("%skey-%d" % (prefix, i)).encode(), value=("%svalue-%d" % (prefix, i)).encode())
               for i in range(cfg["count"])]
    producer.flush(TIMEOUT)
    for f in futures:
        f.get(timeout=TIMEOUT)  # raises the error the record was answered with
    producer.close()
    c = consumer(cfg, cfg["group"])
    c.subscribe([topic])
    lines = []
    deadline = time.monotonic() + TIMEOUT
    while len(lines) < cfg["total"]:
        if time.monotonic() > deadline:
            raise RuntimeError("read %d of %d records in %.0f s" % (len(lines), cfg["total"], TIMEOUT))
        for records in c.poll(timeout_ms=500).values():
            for msg in records:
                lines.append("%d %d %s %s" % (msg.partition, msg.offset, msg.key.decode(), msg.value.decode()))
    c.close(autocommit=False)
    return lines


def main():
    cfg = json.loads(sys.argv[1])
    try:
        modes = {"compacted": compacted, "diskless": diskless}
        if cfg["mode"] not in modes:
            raise ValueError("unknown mode %r" % cfg["mode"])
        for line in modes[cfg["mode"]](cfg):
            print(line)
    except Exception as e:  # noqa: BLE001 - any failure is the test's answer
        print("ERROR", type(e).__name__, e, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
