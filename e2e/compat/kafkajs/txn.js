// txn.js drives sluice's transactions with kafkajs 2.2: a consumer of a
// group reads an input topic without committing, then a transactional
// producer (producer.transaction()) copies the first half of the input to
// an output topic and commits, with the group's offsets of that half
// (sendOffsets), and copies the second half with the offsets of the whole
// input and aborts. It prints one JSON summary line with what the broker
// should now show; e2e/compat_kafkajs_test.go checks it with franz-go.
// Any failure exits 1 with a message on stderr.
//
//	node txn.js --brokers 127.0.0.1:PORT --in IN --out OUT --group G --txn-id T --n 60
'use strict'

const { Kafka, logLevel } = require('kafkajs')

function parseArgs(argv) {
  const o = { brokers: '', in: '', out: '', group: '', 'txn-id': '', n: 60, timeout: 100 }
  for (let i = 2; i < argv.length; i++) {
    const k = argv[i]
    const v = argv[i + 1]
    if (!k.startsWith('--') || v === undefined) die(`bad argument ${k}`)
    const name = k.slice(2)
    if (!(name in o)) die(`unknown flag ${k}`)
    o[name] = typeof o[name] === 'number' ? Number(v) : v
    i++
  }
  for (const k of ['brokers', 'in', 'out', 'group', 'txn-id']) if (!o[k]) die(`--${k} is required`)
  if (!Number.isInteger(o.n) || o.n < 2 * PARTITIONS || o.n % 2 !== 0) die('--n must be an even integer >= 6')
  return o
}

function die(msg) {
  process.stderr.write(`txn.js: FAIL: ${msg}\n`)
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
let stage = 'start'
const overall = setTimeout(() => die(`did not finish within ${opts.timeout}s (stage: ${stage})`), opts.timeout * 1000)
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

const kafka = new Kafka({
  clientId: 'sluice-compat-kafkajs-txn',
  brokers: opts.brokers.split(','),
  logLevel: logLevel.ERROR,
  connectionTimeout: 5000,
  requestTimeout: 15000,
  retry: { retries: 5, initialRetryTime: 200, maxRetryTime: 2000 },
})
const admin = kafka.admin()
const plain = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
const txnProducer = kafka.producer({
  transactionalId: opts['txn-id'],
  idempotent: true,
  maxInFlightRequests: 1,
  transactionTimeout: 30000,
})
const consumer = kafka.consumer({
  groupId: opts.group,
  sessionTimeout: 10000,
  rebalanceTimeout: 20000,
  heartbeatInterval: 1000,
  maxWaitTimeInMs: 250,
})

// Input message i goes to partition i % PARTITIONS; the output copy of
// input i has key out-i and is marked with the transaction that sent it.
const keyOf = i => `in-${String(i).padStart(6, '0')}`
const indexOfKey = k => {
  const m = /^in-(\d{6})$/.exec(k)
  return m ? Number(m[1]) : -1
}

// readInput runs the group's consumer until it has every input message,
// without committing, and returns [{i, partition, offset}] by index. The
// consumer stays in the group (Stable) while the transactions run.
async function readInput() {
  const seen = new Map()
  let done
  const reached = new Promise(resolve => (done = resolve))
  await consumer.connect()
  await consumer.subscribe({ topics: [opts.in], fromBeginning: true })
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      const i = indexOfKey(message.key && message.key.toString())
      if (i >= 0 && !seen.has(i)) seen.set(i, { i, partition, offset: Number(message.offset) })
      if (seen.size >= opts.n) done()
    },
  })
  const r = await Promise.race([reached.then(() => 'ok'), sleep(60000).then(() => 'timeout')])
  check(r === 'ok', `consumer read ${seen.size} of ${opts.n} input messages within 60s`)
  return [...seen.values()].sort((a, b) => a.i - b.i)
}

// nextOffsets returns {partition: offset after the last of msgs there}.
function nextOffsets(msgs) {
  const out = {}
  for (const m of msgs) out[m.partition] = Math.max(out[m.partition] || 0, m.offset + 1)
  return out
}

function offsetsArg(offs) {
  return [{ topic: opts.in, partitions: Object.entries(offs).map(([p, o]) => ({ partition: Number(p), offset: String(o) })) }]
}

// copyInTxn sends the output copies of msgs and the group's offsets in one
// transaction and commits or aborts it.
async function copyInTxn(msgs, commit) {
  const tag = commit ? 'committed' : 'aborted'
  const txn = await txnProducer.transaction()
  try {
    const res = await txn.send({
      topic: opts.out,
      acks: -1,
      messages: msgs.map(m => ({ key: `out-${m.i}`, value: `${tag}-${m.i}`, partition: m.i % PARTITIONS })),
    })
    for (const r of res) check(r.errorCode === 0, `${tag} send: partition ${r.partition} error ${r.errorCode}`)
    await txn.sendOffsets({ consumerGroupId: opts.group, topics: offsetsArg(nextOffsets(msgs)) })
  } catch (e) {
    await txn.abort().catch(() => {})
    throw e
  }
  if (commit) await txn.commit()
  else await txn.abort()
}

async function committed() {
  const res = await admin.fetchOffsets({ groupId: opts.group, topics: [opts.in] })
  const out = {}
  for (const p of res[0].partitions) out[p.partition] = Number(p.offset)
  return out
}

async function main() {
  stage = 'admin'
  await admin.connect()
  await admin.createTopics({
    topics: [opts.in, opts.out].map(topic => ({ topic, numPartitions: PARTITIONS, replicationFactor: 1 })),
    waitForLeaders: true,
    timeout: 10000,
  })

  stage = 'produce input'
  await plain.connect()
  const input = []
  for (let i = 0; i < opts.n; i++) input.push({ key: keyOf(i), value: `v-${i}`, partition: i % PARTITIONS })
  await plain.send({ topic: opts.in, acks: -1, messages: input })

  stage = 'consume input'
  const msgs = await readInput()
  const half = opts.n / 2
  const first = msgs.slice(0, half)

  stage = 'transactional producer connect'
  await txnProducer.connect()

  stage = 'committed transaction'
  await copyInTxn(first, true)
  const afterCommit = await committed()

  stage = 'aborted transaction'
  await copyInTxn(msgs, false) // the whole input, offsets at its end
  const afterAbort = await committed()

  stage = 'disconnect'
  await consumer.disconnect()
  await txnProducer.disconnect()
  await plain.disconnect()
  await admin.disconnect()

  process.stdout.write(JSON.stringify({
    ok: true,
    kafkajs: require('kafkajs/package.json').version,
    committedRecords: half,
    abortedRecords: opts.n,
    txnOffsets: nextOffsets(first),
    abortedOffsets: nextOffsets(msgs),
    committedAfterCommit: afterCommit,
    committedAfterAbort: afterAbort,
  }) + '\n')
}

main().then(
  () => {
    clearTimeout(overall)
    process.exit(0)
  },
  err => {
    const detail = err && err.stack ? err.stack : String(err)
    process.stderr.write(`txn.js: FAIL at stage ${stage}: ${detail}\n`)
    const closing = Promise.allSettled([consumer, txnProducer, plain, admin].map(c => c.disconnect()))
    Promise.race([closing, sleep(3000)]).then(() => process.exit(1))
  }
)
