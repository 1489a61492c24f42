"""confluent-kafka-python (librdkafka) against a Strata agent, for
internal/e2e/clients_test.go. Run with Debian's /usr/bin/python3.

argv[1] is a JSON object:
  bootstrap  host:port of the listener
  security   security.protocol: SASL_SSL, SSL or PLAINTEXT
  mechanism, username, password   SASL (SASL_SSL only); for OAUTHBEARER
                                  the token is $STRATA_OAUTH_TOKEN instead
  ca, cert, key                   PEM files (cert and key: mutual TLS)
  topic, count                    what to create, produce and read back
  mode       "roundtrip": create the topic, produce count keyed records,
             read them back from offset 0 and print "key:value" lines;
             "connect": fetch metadata only;
             "transactions": create the topic, abort a transaction of count
             records "aborted-<i>" (written before the abort), commit one of
             count records "committed-<i>", then read count records back
             at read_committed and print their values;
             "compacted": read a cleaned compacted topic as
             internal/e2e/compact_clients_test.go describes (fields group,
             stop, end, seeks; phases A, B and S<i>);
             "compacted_committed": its phase C, at read_committed, to end;
             "diskless": produce count records "<prefix>key-<i>" /
             "<prefix>value-<i>" to the existing topic with acks=all and
             librdkafka's defaults otherwise, then read it from the start
             in a fresh consumer group `group` until total records are in,
             printing "<partition> <offset> <key> <value>" lines
             (internal/e2e/diskless_clients_test.go).

Any client error ends the run with exit status 1 and one line on stderr,
"ERROR <librdkafka error name> <message>", which the Go test matches.
"""

import json
import os
import sys
import time

from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaError,
                             KafkaException, Producer, TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic

TIMEOUT = 20.0  # seconds for each step; the Go test bounds the whole run


class ClientError(Exception):
    def __init__(self, err):
        super().__init__(err)
        self.err = err


def fail(err):
    if isinstance(err, KafkaError):
        print("ERROR", err.name(), err.str(), file=sys.stderr)
    else:
        print("ERROR", type(err).__name__, err, file=sys.stderr)
    sys.exit(1)


def librdkafka_config(cfg):
    conf = {
        "bootstrap.servers": cfg["bootstrap"],
        "security.protocol": cfg["security"],
        # Errors such as a refused SASL login reach error_cb; raising there
        # stops the run at the first one instead of retrying until TIMEOUT.
        "error_cb": raise_error,
    }
    if cfg.get("ca"):
        conf["ssl.ca.location"] = cfg["ca"]
    if cfg.get("mechanism") == "OAUTHBEARER":
        conf["sasl.mechanisms"] = "OAUTHBEARER"
        conf["oauth_cb"] = oauth_token
    elif cfg.get("mechanism"):
        conf["sasl.mechanisms"] = cfg["mechanism"]
        conf["sasl.username"] = cfg["username"]
        conf["sasl.password"] = cfg["password"]
    if cfg.get("cert"):
        conf["ssl.certificate.location"] = cfg["cert"]
        conf["ssl.key.location"] = cfg["key"]
    return conf


def oauth_token(_oauthbearer_config):
    # The Go test minted the token; librdkafka wants its expiry (seconds
    # since the epoch) to know when to ask again, which this run never
    # lives to see.
    return os.environ["STRATA_OAUTH_TOKEN"], time.time() + 3600


def raise_error(err):
    raise ClientError(err)


def connect(conf):
    # error_cb runs only inside poll(), not while list_topics waits, so
    # alternate the two until metadata arrives or an error is raised.
    producer = Producer(conf)
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        producer.poll(0.2)
        try:
            producer.list_topics(timeout=0.5)
            return
        except KafkaException:
            continue
    producer.poll(0.2)
    raise RuntimeError("no metadata in %.0f s" % TIMEOUT)


def create_topic(conf, topic):
    admin = AdminClient(conf)
    # librdkafka asks oauth_cb for a token from poll(): serve it before
    # the first request, which would otherwise wait for it forever.
    if "oauth_cb" in conf:
        admin.poll(0.5)
    futures = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)],
                                  operation_timeout=TIMEOUT, request_timeout=TIMEOUT)
    futures[topic].result(timeout=TIMEOUT)


def produce(conf, topic, count, prefix=""):
    producer = Producer(dict(conf, acks="all"))
    failed = []

    def delivered(err, _msg):
        if err is not None:
            failed.append(err)

    for i in range(count):
        producer.produce(topic, key=("%skey-%d" % (prefix, i)).encode(), value=("%svalue-%d" % (prefix, i)).encode(),
                         on_delivery=delivered)
    if producer.flush(TIMEOUT) != 0:
        raise RuntimeError("records still undelivered after %.0f s" % TIMEOUT)
    if failed:
        raise ClientError(failed[0])


def transactions(conf, topic, count):
    producer = Producer(dict(conf, **{"transactional.id": "confluent-kafka-python-" + topic}))
    producer.init_transactions(TIMEOUT)
    producer.begin_transaction()
    for i in range(count):
        producer.produce(topic, value=b"aborted-%d" % i)
    if producer.flush(TIMEOUT) != 0:
        raise RuntimeError("records still undelivered after %.0f s" % TIMEOUT)
    producer.abort_transaction(TIMEOUT)
    producer.begin_transaction()
    for i in range(count):
        producer.produce(topic, value=b"committed-%d" % i)
    producer.commit_transaction(TIMEOUT)
    consumer = Consumer(dict(conf, **{"group.id": "confluent-kafka-python-" + topic,
                                      "enable.auto.commit": False,
                                      "isolation.level": "read_committed"}))
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    values = []
    deadline = time.monotonic() + TIMEOUT
    while len(values) < count and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is None:
            continue
        if msg.error():
            raise ClientError(msg.error())
        values.append(msg.value().decode())
    consumer.close()
    return values


def consume(conf, topic, count):
    consumer = Consumer(dict(conf, **{"group.id": "confluent-kafka-python-" + topic,
                                      "enable.auto.commit": False}))
    # assign, not subscribe: reads from offset 0 without a group join.
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    lines = []
    deadline = time.monotonic() + TIMEOUT
    while len(lines) < count and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is None:
            continue
        if msg.error():
            raise ClientError(msg.error())
        lines.append("%s:%s" % (msg.key().decode(), msg.value().decode()))
    consumer.close()
    return lines


def record_line(phase, msg):
    def nullable(b):
        return "NULL" if b is None else b.decode()
    return "%s %d %s %s" % (phase, msg.offset(), nullable(msg.key()), nullable(msg.value()))


def read_until(consumer, phase, last, lines):
    """Appends the records consumer hands out up to offset last."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is None:
            continue
        if msg.error():
            raise ClientError(msg.error())
        lines.append(record_line(phase, msg))
        if msg.offset() >= last:
            return
    raise RuntimeError("phase %s: no offset %d within %.0f s" % (phase, last, TIMEOUT))


def compacted(conf, cfg):
    topic, lines = cfg["topic"], []
    group = dict(conf, **{"group.id": cfg["group"], "enable.auto.commit": False,
                          "auto.offset.reset": "earliest"})
    # A: read to stop, commit stop+1 (inside a gap), leave; B: resume.
    consumer = Consumer(group)
    consumer.subscribe([topic])
    read_until(consumer, "A", cfg["stop"], lines)
    consumer.commit(offsets=[TopicPartition(topic, 0, cfg["stop"] + 1)], asynchronous=False)
    consumer.close()
    consumer = Consumer(group)
    consumer.subscribe([topic])
    read_until(consumer, "B", cfg["end"] - 1, lines)
    consumer.close()
    for i, offset in enumerate(cfg["seeks"]):
        consumer = Consumer(dict(group, **{"group.id": "%s-seek-%d" % (cfg["group"], i)}))
        consumer.assign([TopicPartition(topic, 0, offset)])
        read_until(consumer, "S%d" % i, offset, lines)
        consumer.close()
    return lines


def compacted_committed(conf, cfg):
    consumer = Consumer(dict(conf, **{"group.id": "confluent-kafka-python-committed",
                                      "enable.auto.commit": False,
                                      "isolation.level": "read_committed"}))
    consumer.assign([TopicPartition(cfg["topic"], 0, OFFSET_BEGINNING)])
    lines = []
    read_until(consumer, "C", cfg["end"] - 1, lines)
    consumer.close()
    return lines


def diskless(conf, cfg):
    produce(conf, cfg["topic"], cfg["count"], cfg["prefix"])
    consumer = Consumer(dict(conf, **{"group.id": cfg["group"], "auto.offset.reset": "earliest"}))
    consumer.subscribe([cfg["topic"]])
    lines = []
    deadline = time.monotonic() + TIMEOUT
    while len(lines) < cfg["total"]:
        if time.monotonic() > deadline:
            raise RuntimeError("read %d of %d records in %.0f s" % (len(lines), cfg["total"], TIMEOUT))
        msg = consumer.poll(1.0)
        if msg is None:
            continue
        if msg.error():
            raise ClientError(msg.error())
        lines.append("%d %d %s %s" % (msg.partition(), msg.offset(), msg.key().decode(), msg.value().decode()))
    consumer.close()
    return lines


def main():
    cfg = json.loads(sys.argv[1])
    conf = librdkafka_config(cfg)
    try:
        if cfg["mode"] == "connect":
            connect(conf)
            print("connected")
            return
        if cfg["mode"] in ("compacted", "compacted_committed"):
            read = compacted if cfg["mode"] == "compacted" else compacted_committed
            for line in read(conf, cfg):
                print(line)
            return
        if cfg["mode"] == "diskless":
            for line in diskless(conf, cfg):
                print(line)
            return
        create_topic(conf, cfg["topic"])
        if cfg["mode"] == "transactions":
            for value in transactions(conf, cfg["topic"], cfg["count"]):
                print(value)
            return
        produce(conf, cfg["topic"], cfg["count"])
        for line in consume(conf, cfg["topic"], cfg["count"]):
            print(line)
    except ClientError as e:
        fail(e.err)
    except KafkaException as e:
        fail(e.args[0])
    except Exception as e:  # noqa: BLE001 - any failure is the test's answer
        fail(e)


if __name__ == "__main__":
    main()
