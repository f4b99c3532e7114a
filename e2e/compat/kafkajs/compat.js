// compat.js drives sluice with kafkajs 2.2 (a client that uses no flexible
// protocol versions) through admin, an idempotent producer (plain and GZIP
// batches) and a consumer group, checks everything it reads back, and prints
// one JSON summary line. Any mismatch exits 1 with a message on stderr.
// Run by e2e/compat_kafkajs_test.go:
//
//	node compat.js --brokers 127.0.0.1:PORT --topic T --group G --n 3000 --m 500
'use strict'

const { Kafka, logLevel, CompressionTypes, Partitioners } = require('kafkajs')

function parseArgs(argv) {
  // --ca, --user, --password, --mechanism: connect over SASL_SSL.
  const o = { brokers: '', topic: '', group: '', n: 3000, m: 500, timeout: 100, ca: '', user: '', password: '', mechanism: 'scram-sha-512' }
  for (let i = 2; i < argv.length; i++) {
    const k = argv[i]
    const v = argv[i + 1]
    if (!k.startsWith('--') || v === undefined) die(`bad argument ${k}`)
    const name = k.slice(2)
    if (!(name in o)) die(`unknown flag ${k}`)
    o[name] = typeof o[name] === 'number' ? Number(v) : v
    i++
  }
  if (!o.brokers || !o.topic || !o.group) die('--brokers, --topic and --group are required')
  for (const k of ['n', 'm', 'timeout']) {
    if (!Number.isInteger(o[k]) || o[k] <= 0) die(`--${k} must be a positive integer`)
  }
  return o
}

function die(msg) {
  process.stderr.write(`compat.js: FAIL: ${msg}\n`)
  process.exit(1)
}

function check(cond, msg) {
  if (!cond) throw new Error(msg)
}

const PARTITIONS = 3
const opts = parseArgs(process.argv)
for (const b of opts.brokers.split(',')) {
  if (!b.startsWith('127.0.0.1:')) die(`broker ${b} is not on 127.0.0.1`)
}

// The whole run is bounded: a hang anywhere exits 1.
const overall = setTimeout(() => die(`did not finish within ${opts.timeout}s (stage: ${stage})`), opts.timeout * 1000)
let stage = 'start'

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

// Message i: key, value (of varying length) and headers, all derived from i.
const keyOf = i => `key-${String(i).padStart(6, '0')}`
const valueOf = i => `value-${i}-` + 'x'.repeat(i % 257)
const headersOf = (i, codec) => ({ source: 'kafkajs', idx: String(i), codec })
const indexOfKey = k => {
  const m = /^key-(\d{6})$/.exec(k)
  return m ? Number(m[1]) : -1
}

function messages(from, to, codec) {
  const out = []
  for (let i = from; i < to; i++) out.push({ key: keyOf(i), value: valueOf(i), headers: headersOf(i, codec) })
  return out
}

const security = opts.ca
  ? {
      ssl: { ca: [require('fs').readFileSync(opts.ca, 'utf8')], servername: '127.0.0.1' },
      sasl: { mechanism: opts.mechanism, username: opts.user, password: opts.password },
    }
  : {}
const kafka = new Kafka({
  clientId: 'sluice-compat-kafkajs',
  brokers: opts.brokers.split(','),
  ...security,
  logLevel: logLevel.ERROR,
  connectionTimeout: 5000,
  requestTimeout: 15000,
  retry: { retries: 5, initialRetryTime: 200, maxRetryTime: 2000 },
})

const admin = kafka.admin()
const producer = kafka.producer({
  idempotent: true,
  maxInFlightRequests: 1,
  createPartitioner: Partitioners.DefaultPartitioner,
  retry: { retries: 5 },
})
const consumers = []

// codecs records which codec each message index was sent with, so headers
// can be checked on the way back.
const codecs = new Map()

// produce sends messages [from, to) in `sends` plain sends of equal size and
// then `gz` more with GZIP; it returns the number sent.
async function produce(from, to, gz) {
  const plainEnd = to - gz
  const sends = 4
  const per = Math.ceil((plainEnd - from) / sends)
  for (let s = from; s < plainEnd; s += per) {
    const e = Math.min(s + per, plainEnd)
    const res = await producer.send({ topic: opts.topic, acks: -1, messages: messages(s, e, 'none') })
    checkAcks(res, `send [${s},${e})`)
    for (let i = s; i < e; i++) codecs.set(i, 'none')
  }
  if (gz > 0) {
    const res = await producer.send({
      topic: opts.topic,
      acks: -1,
      compression: CompressionTypes.GZIP,
      messages: messages(plainEnd, to, 'gzip'),
    })
    checkAcks(res, `gzip send [${plainEnd},${to})`)
    for (let i = plainEnd; i < to; i++) codecs.set(i, 'gzip')
  }
  return to - from
}

function checkAcks(res, what) {
  check(Array.isArray(res) && res.length > 0, `${what}: no record metadata in the answer`)
  for (const r of res) {
    check(r.topicName === opts.topic, `${what}: acknowledged topic ${r.topicName}`)
    check(r.errorCode === 0, `${what}: partition ${r.partition} error code ${r.errorCode}`)
    check(Number(r.baseOffset) >= 0, `${what}: partition ${r.partition} base offset ${r.baseOffset}`)
  }
}

// endOffsets returns {partition: high watermark} from ListOffsets.
async function endOffsets() {
  const offs = await admin.fetchTopicOffsets(opts.topic)
  check(offs.length === PARTITIONS, `fetchTopicOffsets: ${offs.length} partitions, want ${PARTITIONS}`)
  const out = {}
  for (const o of offs) {
    check(o.low === '0', `fetchTopicOffsets: partition ${o.partition} low ${o.low}, want 0`)
    check(o.offset === o.high, `fetchTopicOffsets: partition ${o.partition} offset ${o.offset} != high ${o.high}`)
    out[o.partition] = Number(o.high)
  }
  return out
}

// committed returns {partition: committed offset} of the group from OffsetFetch.
async function committed() {
  const res = await admin.fetchOffsets({ groupId: opts.group, topics: [opts.topic] })
  check(res.length === 1 && res[0].topic === opts.topic, `fetchOffsets: topics ${JSON.stringify(res)}`)
  const out = {}
  for (const p of res[0].partitions) out[p.partition] = Number(p.offset)
  return out
}

function sameOffsets(a, b) {
  for (let p = 0; p < PARTITIONS; p++) if (a[p] !== b[p]) return false
  return true
}

// consume runs a new consumer of the group until `want` messages arrived
// (bounded by limitMs), then for settleMs more to catch extras and
// duplicates, checks each message and returns what it saw.
async function consume(name, want, limitMs, settleMs) {
  const consumer = kafka.consumer({
    groupId: opts.group,
    sessionTimeout: 10000,
    rebalanceTimeout: 20000,
    heartbeatInterval: 1000,
    maxWaitTimeInMs: 250,
    retry: { retries: 5 },
  })
  consumers.push(consumer)
  const seen = new Map() // key index -> {partition, offset}
  const last = {} // partition -> {offset, idx}
  let errors = []
  let done
  const reached = new Promise(resolve => (done = resolve))
  await consumer.connect()
  await consumer.subscribe({ topics: [opts.topic], fromBeginning: true })
  await consumer.run({
    eachMessage: async ({ topic, partition, message }) => {
      try {
        check(topic === opts.topic, `topic ${topic}`)
        const key = message.key ? message.key.toString() : null
        const i = indexOfKey(key)
        check(i >= 0, `partition ${partition} offset ${message.offset}: bad key ${key}`)
        check(!seen.has(i), `${key} consumed twice (partition ${partition} offsets ${seen.has(i) && seen.get(i).offset} and ${message.offset})`)
        const value = message.value ? message.value.toString() : null
        check(value === valueOf(i), `${key}: value ${JSON.stringify(value && value.slice(0, 40))}`)
        const h = message.headers || {}
        const got = {}
        for (const [k, v] of Object.entries(h)) got[k] = Buffer.isBuffer(v) ? v.toString() : String(v)
        const wantH = headersOf(i, codecs.get(i))
        check(JSON.stringify(got) === JSON.stringify(wantH), `${key}: headers ${JSON.stringify(got)}, want ${JSON.stringify(wantH)}`)
        const off = Number(message.offset)
        const prev = last[partition]
        if (prev) {
          check(off > prev.offset, `partition ${partition}: offset ${off} after ${prev.offset}`)
          check(i > prev.idx, `partition ${partition}: ${key} at offset ${off} after key index ${prev.idx} (order lost)`)
        }
        last[partition] = { offset: off, idx: i }
        seen.set(i, { partition, offset: off })
        if (seen.size >= want) done()
      } catch (e) {
        errors.push(e.message)
        done()
      }
    },
  })
  const t0 = Date.now()
  const timer = sleep(limitMs).then(() => 'timeout')
  const r = await Promise.race([reached.then(() => 'ok'), timer])
  if (r === 'timeout' && errors.length === 0) {
    errors.push(`${name}: ${seen.size} of ${want} messages within ${limitMs}ms`)
  }
  if (errors.length === 0) await sleep(settleMs) // catch duplicates and extras
  const elapsed = Date.now() - t0
  if (errors.length > 0) throw new Error(`${name}: ${errors.slice(0, 5).join('; ')}`)
  check(seen.size === want, `${name}: consumed ${seen.size} messages, want ${want}`)
  return { consumer, seen, last, elapsed }
}

async function main() {
  stage = 'admin connect'
  await admin.connect()

  stage = 'createTopics'
  const created = await admin.createTopics({
    topics: [{ topic: opts.topic, numPartitions: PARTITIONS, replicationFactor: 1 }],
    waitForLeaders: true,
    timeout: 10000,
  })
  check(created === true, `createTopics returned ${created}, want true`)
  // kafkajs logs this expected TOPIC_ALREADY_EXISTS answer at ERROR level.
  const again = await admin.createTopics({ topics: [{ topic: opts.topic, numPartitions: PARTITIONS }], timeout: 10000 })
  check(again === false, `createTopics of an existing topic returned ${again}, want false`)

  stage = 'listTopics'
  const topics = await admin.listTopics()
  check(topics.includes(opts.topic), `listTopics lacks ${opts.topic}: ${JSON.stringify(topics)}`)

  stage = 'fetchTopicMetadata'
  const md = await admin.fetchTopicMetadata({ topics: [opts.topic] })
  check(md.topics.length === 1 && md.topics[0].name === opts.topic, `fetchTopicMetadata: ${JSON.stringify(md)}`)
  const parts = md.topics[0].partitions.slice().sort((a, b) => a.partitionId - b.partitionId)
  check(parts.length === PARTITIONS, `fetchTopicMetadata: ${parts.length} partitions`)
  parts.forEach((p, idx) => {
    check(p.partitionId === idx, `fetchTopicMetadata: partition ids ${parts.map(x => x.partitionId)}`)
    check(p.partitionErrorCode === 0, `fetchTopicMetadata: partition ${idx} error ${p.partitionErrorCode}`)
    check(p.leader >= 0 && p.replicas.includes(p.leader) && p.isr.includes(p.leader),
      `fetchTopicMetadata: partition ${idx} leader ${p.leader} replicas ${p.replicas} isr ${p.isr}`)
  })

  stage = 'describeCluster'
  const cluster = await admin.describeCluster()
  check(cluster.brokers.length >= 1, `describeCluster: ${JSON.stringify(cluster)}`)
  check(cluster.brokers.some(b => `${b.host}:${b.port}` === opts.brokers.split(',')[0]),
    `describeCluster: brokers ${JSON.stringify(cluster.brokers)} lack ${opts.brokers}`)

  stage = 'fetchTopicOffsets (empty)'
  const empty = await endOffsets()
  check(sameOffsets(empty, { 0: 0, 1: 0, 2: 0 }), `new topic end offsets ${JSON.stringify(empty)}`)

  stage = 'produce'
  const startTs = Date.now() - 60 * 1000
  await producer.connect()
  const gzN = Math.min(500, Math.floor(opts.n / 5))
  await produce(0, opts.n, gzN)

  stage = 'fetchTopicOffsets'
  const end1 = await endOffsets()
  const total1 = Object.values(end1).reduce((a, b) => a + b, 0)
  check(total1 === opts.n, `end offsets ${JSON.stringify(end1)} sum to ${total1}, want ${opts.n}`)
  for (let p = 0; p < PARTITIONS; p++) check(end1[p] > 0, `partition ${p} got no message: ${JSON.stringify(end1)}`)

  stage = 'fetchTopicOffsetsByTimestamp'
  const byTs = await admin.fetchTopicOffsetsByTimestamp(opts.topic, startTs)
  check(byTs.length === PARTITIONS && byTs.every(o => o.offset === '0'),
    `fetchTopicOffsetsByTimestamp(a minute ago): ${JSON.stringify(byTs)}, want offset 0 everywhere`)

  stage = 'consume 1'
  const c1 = await consume('consumer 1', opts.n, 60000, 1500)
  for (let p = 0; p < PARTITIONS; p++) {
    const l = c1.last[p]
    check(l && l.offset === end1[p] - 1, `consumer 1: partition ${p} last offset ${l && l.offset}, want ${end1[p] - 1}`)
  }

  stage = 'describeGroups (stable)'
  const dg1 = await admin.describeGroups([opts.group])
  const g1 = dg1.groups[0]
  check(dg1.groups.length === 1 && g1.groupId === opts.group && g1.errorCode === 0, `describeGroups: ${JSON.stringify(dg1)}`)
  check(g1.state === 'Stable' && g1.protocolType === 'consumer' && g1.members.length === 1,
    `describeGroups while consuming: state ${g1.state} protocolType ${g1.protocolType} members ${g1.members.length}`)
  check(g1.protocol === 'RoundRobinAssigner', `describeGroups: protocol ${g1.protocol}, want RoundRobinAssigner`)

  stage = 'consumer 1 disconnect'
  await c1.consumer.disconnect()

  stage = 'fetchOffsets 1'
  const com1 = await committed()
  check(sameOffsets(com1, end1), `committed offsets ${JSON.stringify(com1)} after consumer 1, want end offsets ${JSON.stringify(end1)}`)

  stage = 'produce more'
  await produce(opts.n, opts.n + opts.m, Math.floor(opts.m / 4))
  const end2 = await endOffsets()
  const total2 = Object.values(end2).reduce((a, b) => a + b, 0)
  check(total2 === opts.n + opts.m, `end offsets ${JSON.stringify(end2)} sum to ${total2}, want ${opts.n + opts.m}`)

  stage = 'consume 2'
  const c2 = await consume('consumer 2', opts.m, 60000, 2000)
  for (const [i, at] of c2.seen) {
    check(i >= opts.n, `consumer 2 got ${keyOf(i)} (partition ${at.partition} offset ${at.offset}), consumed and committed before`)
  }
  for (let p = 0; p < PARTITIONS; p++) {
    const l = c2.last[p]
    if (end2[p] > end1[p]) check(l && l.offset === end2[p] - 1, `consumer 2: partition ${p} last offset ${l && l.offset}, want ${end2[p] - 1}`)
  }

  stage = 'listGroups'
  const lg = await admin.listGroups()
  const mine = lg.groups.filter(g => g.groupId === opts.group)
  check(mine.length === 1 && mine[0].protocolType === 'consumer', `listGroups: ${JSON.stringify(lg)}`)

  stage = 'consumer 2 disconnect'
  await c2.consumer.disconnect()

  stage = 'fetchOffsets 2'
  const com2 = await committed()
  check(sameOffsets(com2, end2), `committed offsets ${JSON.stringify(com2)} after consumer 2, want end offsets ${JSON.stringify(end2)}`)

  stage = 'describeGroups (empty)'
  const dg2 = await admin.describeGroups([opts.group])
  const g2 = dg2.groups[0]
  check(g2 && g2.state === 'Empty' && g2.members.length === 0,
    `describeGroups after every consumer left: state ${g2 && g2.state} members ${g2 && g2.members.length}`)

  stage = 'disconnect'
  await producer.disconnect()
  await admin.disconnect()

  const summary = {
    ok: true,
    kafkajs: require('kafkajs/package.json').version,
    topic: opts.topic,
    group: opts.group,
    produced: opts.n + opts.m,
    gzip: gzN + Math.floor(opts.m / 4),
    consumed1: c1.seen.size,
    consumed2: c2.seen.size,
    endOffsets: end2,
    committed: com2,
    groupState: g1.state,
    consumeMs: [c1.elapsed, c2.elapsed],
  }
  process.stdout.write(JSON.stringify(summary) + '\n')
}

main().then(
  () => {
    clearTimeout(overall)
    process.exit(0)
  },
  err => {
    const detail = err && err.stack ? err.stack : String(err)
    process.stderr.write(`compat.js: FAIL at stage ${stage}: ${detail}\n`)
    // Best effort: leave the group and close connections, but never hang.
    const closing = Promise.allSettled([...consumers, producer, admin].map(c => c.disconnect()))
    Promise.race([closing, sleep(3000)]).then(() => process.exit(1))
  }
)
