// schema_registry.js drives sluice's built-in schema registry with
// @kafkajs/confluent-schema-registry 4.1 and its brokers with kafkajs 2.2:
// it registers an Avro, a JSON Schema and a Protobuf schema under
// <topic>-value of three topics that have confluent.value.schema.validation
// on, finds the ids again (registering twice, by schema, latest), evolves
// the Avro schema (a compatible version is registered, an incompatible one
// is refused with 409), encodes records with the registry's wire framing,
// produces them through sluice, consumes them back with a consumer group and
// decodes them with a second registry client whose cache is empty (it reads
// the schemas by id). It prints one JSON summary line; any mismatch exits 1
// with a message on stderr. Run by e2e/schema_registry_kafkajs_test.go:
//
//	node schema_registry.js --brokers 127.0.0.1:PORT --registry http://127.0.0.1:PORT --prefix P --n 100
'use strict'

const { Kafka, logLevel, Partitioners } = require('kafkajs')
const { SchemaRegistry, SchemaType } = require('@kafkajs/confluent-schema-registry')

function parseArgs(argv) {
  const o = { brokers: '', registry: '', prefix: '', n: 100, timeout: 100 }
  for (let i = 2; i < argv.length; i++) {
    const k = argv[i]
    const v = argv[i + 1]
    if (!k.startsWith('--') || v === undefined) die(`bad argument ${k}`)
    const name = k.slice(2)
    if (!(name in o)) die(`unknown flag ${k}`)
    o[name] = typeof o[name] === 'number' ? Number(v) : v
    i++
  }
  if (!o.brokers || !o.registry || !o.prefix) die('--brokers, --registry and --prefix are required')
  for (const k of ['n', 'timeout']) {
    if (!Number.isInteger(o[k]) || o[k] <= 0) die(`--${k} must be a positive integer`)
  }
  return o
}

function die(msg) {
  process.stderr.write(`schema_registry.js: FAIL: ${msg}\n`)
  process.exit(1)
}

function check(cond, msg) {
  if (!cond) throw new Error(msg)
}

const opts = parseArgs(process.argv)
for (const b of opts.brokers.split(',')) {
  if (!b.startsWith('127.0.0.1:')) die(`broker ${b} is not on 127.0.0.1`)
}
if (!opts.registry.startsWith('http://127.0.0.1:')) die(`registry ${opts.registry} is not on 127.0.0.1`)

// The whole run is bounded: a hang anywhere exits 1.
const overall = setTimeout(() => die(`did not finish within ${opts.timeout}s (stage: ${stage})`), opts.timeout * 1000)
let stage = 'start'

const avroV1 = {
  type: 'record', name: 'User', namespace: 'sluice.e2e',
  fields: [{ name: 'name', type: 'string' }, { name: 'age', type: 'int' }],
}
// v2 adds a field with a default: BACKWARD compatible.
const avroV2 = {
  type: 'record', name: 'User', namespace: 'sluice.e2e',
  fields: [{ name: 'name', type: 'string' }, { name: 'age', type: 'int' }, { name: 'email', type: 'string', default: '' }],
}
// v3 adds a field without a default: not BACKWARD compatible.
const avroV3 = {
  type: 'record', name: 'User', namespace: 'sluice.e2e',
  fields: [{ name: 'name', type: 'string' }, { name: 'age', type: 'int' }, { name: 'email', type: 'string', default: '' }, { name: 'phone', type: 'string' }],
}
const jsonUser = JSON.stringify({
  $schema: 'http://json-schema.org/draft-07/schema#', title: 'User', type: 'object',
  properties: { name: { type: 'string' }, age: { type: 'integer' } }, required: ['name', 'age'],
  additionalProperties: false,
})
const protoUser = `syntax = "proto3";
package sluice.e2e;

message User {
  string name = 1;
  int32 age = 2;
}
`

async function main() {
  const kafka = new Kafka({ clientId: 'sluice-sr-kafkajs', brokers: opts.brokers.split(','), logLevel: logLevel.NOTHING, retry: { retries: 8 } })
  const registry = new SchemaRegistry({ host: opts.registry })
  const topics = { avro: `${opts.prefix}-avro`, json: `${opts.prefix}-json`, proto: `${opts.prefix}-proto` }
  const summary = { ok: false, ids: {}, produced: {}, consumed: {}, incompatibleStatus: 0, avroVersions: 0 }

  stage = 'create topics'
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({
    waitForLeaders: true,
    topics: Object.values(topics).map(topic => ({
      topic, numPartitions: 1, replicationFactor: 1,
      configEntries: [{ name: 'confluent.value.schema.validation', value: 'true' }],
    })),
  })
  await admin.disconnect()

  stage = 'register'
  const schemas = {
    avro: { type: SchemaType.AVRO, schema: JSON.stringify(avroV1) },
    json: { type: SchemaType.JSON, schema: jsonUser },
    proto: { type: SchemaType.PROTOBUF, schema: protoUser },
  }
  for (const [fmt, schema] of Object.entries(schemas)) {
    const subject = `${topics[fmt]}-value`
    const { id } = await registry.register(schema, { subject })
    const again = await registry.register(schema, { subject })
    check(again.id === id, `${fmt}: registered twice, ids ${id} and ${again.id}`)
    const bySchema = await registry.getRegistryIdBySchema(subject, schema)
    check(bySchema === id, `${fmt}: lookup by schema gave ${bySchema}, want ${id}`)
    const latest = await registry.getLatestSchemaId(subject)
    check(latest === id, `${fmt}: latest id ${latest}, want ${id}`)
    const v1 = await registry.getRegistryId(subject, 1)
    check(v1 === id, `${fmt}: version 1 has id ${v1}, want ${id}`)
    summary.ids[fmt] = id
  }
  check(new Set(Object.values(summary.ids)).size === 3, `three schemas share ids: ${JSON.stringify(summary.ids)}`)

  stage = 'evolve avro'
  const avroSubject = `${topics.avro}-value`
  const v2 = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(avroV2) }, { subject: avroSubject })
  check(v2.id !== summary.ids.avro, `avro v2 got v1's id ${v2.id}`)
  summary.ids.avroV2 = v2.id
  try {
    await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(avroV3) }, { subject: avroSubject })
    check(false, 'an incompatible Avro schema (a field without a default) was registered')
  } catch (e) {
    if (e.status === undefined) throw e
    summary.incompatibleStatus = e.status
  }
  check(summary.incompatibleStatus === 409, `incompatible schema: status ${summary.incompatibleStatus}, want 409`)
  summary.avroVersions = (await registry.getLatestSchemaId(avroSubject)) === v2.id ? 2 : 0

  stage = 'produce'
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner, allowAutoTopicCreation: false })
  await producer.connect()
  const user = i => ({ name: `user-${i}`, age: i })
  for (const fmt of Object.keys(topics)) {
    const messages = []
    for (let i = 0; i < opts.n; i++) {
      let value
      if (fmt === 'avro') {
        // Even records with v1, odd ones with v2.
        value = i % 2 === 0 ? await registry.encode(summary.ids.avro, user(i))
          : await registry.encode(v2.id, { ...user(i), email: `u${i}@example.com` })
      } else {
        value = await registry.encode(summary.ids[fmt], user(i))
      }
      check(value[0] === 0, `${fmt}: encoded value does not start with the magic byte`)
      messages.push({ key: String(i), value })
    }
    await producer.send({ topic: topics[fmt], acks: -1, messages })
    summary.produced[fmt] = messages.length
  }
  // A value without the framing is refused by the broker's validation.
  let refused = ''
  try {
    const p2 = kafka.producer({ retry: { retries: 0 } })
    await p2.connect()
    try {
      await p2.send({ topic: topics.json, acks: -1, messages: [{ value: JSON.stringify(user(0)) }] })
    } finally {
      await p2.disconnect()
    }
  } catch (e) {
    refused = e.type || (e.originalError && e.originalError.type) || e.name
  }
  check(refused === 'INVALID_RECORD', `unframed value: ${refused || 'accepted'}, want INVALID_RECORD`)
  summary.unframedRefused = refused
  await producer.disconnect()

  stage = 'consume'
  // A registry client of its own, its cache empty: decoding reads the
  // schemas by id from the registry.
  const reader = new SchemaRegistry({ host: opts.registry })
  const consumer = kafka.consumer({ groupId: `${opts.prefix}-group`, sessionTimeout: 10000, heartbeatInterval: 1000 })
  await consumer.connect()
  for (const topic of Object.values(topics)) {
    await consumer.subscribe({ topic, fromBeginning: true })
  }
  const fmtOf = Object.fromEntries(Object.entries(topics).map(([f, t]) => [t, f]))
  const seen = { avro: 0, json: 0, proto: 0 }
  let failure = null
  const done = new Promise(resolve => {
    consumer.run({
      eachMessage: async ({ topic, message }) => {
        try {
          const fmt = fmtOf[topic]
          const i = Number(message.key.toString())
          check(i === seen[fmt], `${topic}: message ${i} arrived as number ${seen[fmt]}`)
          const got = await reader.decode(message.value)
          check(got.name === `user-${i}` && Number(got.age) === i, `${topic}: message ${i} decoded to ${JSON.stringify(got)}`)
          if (fmt === 'avro' && i % 2 === 1) {
            check(got.email === `u${i}@example.com`, `${topic}: v2 message ${i} decoded to ${JSON.stringify(got)}`)
          }
          seen[fmt]++
        } catch (e) {
          failure = failure || e
        }
        if (failure || Object.values(seen).every(c => c >= opts.n)) resolve()
      },
    })
  })
  await done
  await consumer.disconnect()
  if (failure) throw failure
  summary.consumed = seen
  summary.ok = true
  clearTimeout(overall)
  process.stdout.write(JSON.stringify(summary) + '\n')
}

main().catch(e => die(`${stage}: ${e && e.stack ? e.stack : e}`))
