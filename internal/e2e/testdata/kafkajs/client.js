// kafkajs against a Strata agent, for internal/e2e/clients_test.go, which
// installs package-lock.json's kafkajs with npm ci and runs this with node.
//
// argv[2] is a JSON object:
//   bootstrap  host:port of the listener
//   security   SASL_SSL, SSL or PLAINTEXT (kafkajs has no such key: SASL_SSL
//              is ssl + sasl)
//   mechanism, username, password   SASL (SASL_SSL only)
//   ca, cert, key                   PEM files (cert and key: mutual TLS)
//   topic, count                    what to create, produce and read back
//   mode       "roundtrip": create the topic, produce count keyed records,
//              read them back from the beginning in a fresh group and print
//              "key:value" lines; "connect": connect an admin client only;
//              "transactions": create the topic, abort a transaction of count
//              records "aborted-<i>", commit one of count records
//              "committed-<i>", then read count records back at
//              read_committed in a fresh group and print their values;
//              "compacted": read a cleaned compacted topic as
//              internal/e2e/compact_clients_test.go describes (fields group,
//              stop, end, seeks; phases A, B and S<i>);
//              "diskless": produce count records "<prefix>key-<i>" /
//              "<prefix>value-<i>" to the existing topic with acks=all and
//              kafkajs's defaults otherwise, then read the topic from the
//              beginning in a fresh group `group` until total records are
//              in, printing "<partition> <offset> <key> <value>" lines
//              (internal/e2e/diskless_clients_test.go).
//
// Any client error ends the run with exit status 1 and one line on stderr,
// "ERROR <error name> <message>", which the Go test matches.
'use strict'

const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')

const TIMEOUT_MS = 20000 // for each step; the Go test bounds the whole run

function kafkaConfig(cfg) {
  let ssl = false
  if (cfg.security !== 'PLAINTEXT') {
    ssl = { ca: [fs.readFileSync(cfg.ca)] }
    if (cfg.cert) {
      ssl.cert = fs.readFileSync(cfg.cert)
      ssl.key = fs.readFileSync(cfg.key)
    }
  }
  const conf = {
    clientId: 'strata-e2e-kafkajs',
    brokers: [cfg.bootstrap],
    ssl,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 10000,
    authenticationTimeout: 10000,
    requestTimeout: TIMEOUT_MS,
    // A few retries: the test wants a working client or a clear error soon.
    retry: { retries: 3 },
  }
  if (cfg.mechanism) {
    // kafkajs names mechanisms in lower case: plain, scram-sha-256, scram-sha-512.
    conf.sasl = { mechanism: cfg.mechanism.toLowerCase(), username: cfg.username, password: cfg.password }
  }
  return conf
}

async function createTopic(kafka, topic) {
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: true, timeout: TIMEOUT_MS })
  await admin.disconnect()
}

async function transactions(kafka, topic, count) {
  await createTopic(kafka, topic)
  const producer = kafka.producer({ transactionalId: `kafkajs-${topic}`, idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  const batch = prefix => Array.from({ length: count }, (_, i) => ({ value: `${prefix}-${i}` }))
  const aborted = await producer.transaction()
  await aborted.send({ topic, acks: -1, messages: batch('aborted') })
  await aborted.abort()
  const committed = await producer.transaction()
  await committed.send({ topic, acks: -1, messages: batch('committed') })
  await committed.commit()
  await producer.disconnect()
  return consume(kafka, topic, count, false, m => `${m.value}`)
}

async function roundtrip(kafka, topic, count) {
  await createTopic(kafka, topic)

  const producer = kafka.producer()
  await producer.connect()
  const messages = []
  for (let i = 0; i < count; i++) {
    messages.push({ key: `key-${i}`, value: `value-${i}` })
  }
  await producer.send({ topic, acks: -1, messages })
  await producer.disconnect()
  return consume(kafka, topic, count, true, m => `${m.key}:${m.value}`)
}

// consume reads count records of topic from the beginning, formatted by
// line(message, partition); kafkajs has no assign, so a fresh group does
// (groupId, kafkajs-<topic> by default).
async function consume(kafka, topic, count, readUncommitted, line, groupId = `kafkajs-${topic}`) {
  const consumer = kafka.consumer({ groupId, readUncommitted })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  const lines = []
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`read ${lines.length} of ${count} records in ${TIMEOUT_MS} ms`)), TIMEOUT_MS)
    consumer.on(consumer.events.CRASH, e => { clearTimeout(timer); reject(e.payload.error) })
    consumer.run({
      eachMessage: async ({ partition, message }) => {
        lines.push(line(message, partition))
        if (lines.length >= count) {
          clearTimeout(timer)
          resolve()
        }
      },
    }).catch(reject)
  })
  await consumer.disconnect()
  return lines
}

// readUntil runs a consumer of groupId on topic until it hands out the
// record at offset last, returning "<phase> <offset> <key> <value>" lines
// (NULL for null); onRun runs once consumer.run has started (seeks must
// come after it), atLast once the record at last is read.
async function readUntil(kafka, topic, groupId, phase, last, onRun, atLast) {
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 200 })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  const lines = []
  const nullable = b => (b === null ? 'NULL' : b.toString())
  let done = false
  try {
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`phase ${phase}: no offset ${last} in ${TIMEOUT_MS} ms`)), TIMEOUT_MS)
      consumer.on(consumer.events.CRASH, e => { clearTimeout(timer); reject(e.payload.error) })
      consumer.run({
        autoCommit: false,
        eachMessage: async ({ partition, message }) => {
          if (done) {
            return // read past last before the consumer stopped
          }
          lines.push(`${phase} ${message.offset} ${nullable(message.key)} ${nullable(message.value)}`)
          if (Number(message.offset) >= last) {
            done = true
            await atLast(consumer, partition)
            clearTimeout(timer)
            resolve()
          }
        },
      }).then(() => onRun(consumer)).catch(reject)
    })
  } finally {
    await consumer.disconnect()
  }
  return lines
}

async function compacted(kafka, cfg) {
  const nothing = async () => {}
  const commit = async (consumer, partition) =>
    consumer.commitOffsets([{ topic: cfg.topic, partition, offset: String(cfg.stop + 1) }])
  const lines = await readUntil(kafka, cfg.topic, cfg.group, 'A', cfg.stop, nothing, commit)
  lines.push(...await readUntil(kafka, cfg.topic, cfg.group, 'B', cfg.end - 1, nothing, nothing))
  for (const [i, offset] of cfg.seeks.entries()) {
    const seek = async consumer => consumer.seek({ topic: cfg.topic, partition: 0, offset: String(offset) })
    lines.push(...await readUntil(kafka, cfg.topic, `${cfg.group}-seek-${i}`, `S${i}`, offset, seek, nothing))
  }
  return lines
}

async function diskless(kafka, cfg) {
  const producer = kafka.producer()
  await producer.connect()
  const messages = []
  for (let i = 0; i < cfg.count; i++) {
    messages.push({ key: `${cfg.prefix}key-${i}`, value: `${cfg.prefix}value-${i}` })
  }
  // send resolves once every partition's records are acknowledged, and
  // rejects with the first error otherwise.
  await producer.send({ topic: cfg.topic, acks: -1, messages })
  await producer.disconnect()
  // readUncommitted false is kafkajs's default.
  return consume(kafka, cfg.topic, cfg.total, false,
    (m, partition) => `${partition} ${m.offset} ${m.key} ${m.value}`, cfg.group)
}

async function main() {
  const cfg = JSON.parse(process.argv[2])
  const kafka = new Kafka(kafkaConfig(cfg))
  if (cfg.mode === 'connect') {
    const admin = kafka.admin()
    await admin.connect()
    await admin.listTopics()
    await admin.disconnect()
    console.log('connected')
    return
  }
  if (cfg.mode === 'compacted') {
    for (const line of await compacted(kafka, cfg)) {
      console.log(line)
    }
    return
  }
  if (cfg.mode === 'diskless') {
    for (const line of await diskless(kafka, cfg)) {
      console.log(line)
    }
    return
  }
  const run = cfg.mode === 'transactions' ? transactions : roundtrip
  for (const line of await run(kafka, cfg.topic, cfg.count)) {
    console.log(line)
  }
}

main().catch(e => {
  console.error(`ERROR ${e.name} ${e.message}`)
  process.exit(1)
})
