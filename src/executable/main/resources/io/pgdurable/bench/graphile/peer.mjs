// graphile-worker as the peer of pgdurable's bench scenario `peers` (GraphileWorkerPeer starts it). The Java side
// owns the timing windows and the order of the arms, so this script only does what one command line on stdin asks
// and answers with one JSON line on stdout; graphile-worker's own log lines go to stderr, never to stdout.
//
// Commands: {"cmd":"fill","base":B,"items":N} adds jobs B..B+N-1 (untimed); {"cmd":"drain","base":B,"items":N,
// "batched":bool} drains them with a fresh runner, timed; {"cmd":"left"} counts the jobs still in the table;
// {"cmd":"wake","jobs":N,"warmUp":W,"base":B,"minGapMs":a,"maxGapMs":b}; {"cmd":"quit"}. The first line written is
// {"ready":true,"version":...,"node":...}; every answer has "ok" and, when false, "error".
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { EventEmitter } from 'node:events';
import { Logger, makeWorkerUtils, run, runMigrations } from 'graphile-worker';
import pg from 'pg';

const CONCURRENCY = 4;
const BATCH = 100;
const TASK = 'pgdurable_peer';
const FILL_CHUNK = 1000;
const WAIT_LIMIT_MS = 600_000;
const WAKE_LIMIT_MS = 40_000;

const connection = JSON.parse(process.env.PGDURABLE_PEER_CONNECTION);
const schema = process.env.PGDURABLE_PEER_SCHEMA;
const here = new URL('.', import.meta.url);
const version = JSON.parse(readFileSync(new URL('node_modules/graphile-worker/package.json', here), 'utf8')).version;

// Only warnings and errors: graphile-worker's default console logger writes a line per job, which would time the
// pipe rather than the queue (NO_LOG_SUCCESS, set by the Java side, also skips building those lines).
const logger = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning') {
    process.stderr.write(`graphile-worker ${level}: ${message}\n`);
  }
});

const now = () => process.hrtime.bigint();

// Counts the jobs whose completion reached the database: graphile-worker does not await its completion writes (with
// or without batching), so the end of a drain is when the last completing DELETE returned, not when a task returned.
const completions = { target: Infinity, done: 0, at: 0n, resolve: null };
function countCompletion(query, result) {
  const text = typeof query === 'string' ? query : query && query.text;
  if (typeof text === 'string' && /^\s*delete from\b/i.test(text) && text.includes('._private_jobs')) {
    completions.done += result.rowCount || 0;
    if (completions.done >= completions.target && completions.resolve) {
      completions.at = now();
      const r = completions.resolve;
      completions.resolve = null;
      r();
    }
  }
}

function makePool(max) {
  const pool = new pg.Pool({ ...connection, max });
  pool.on('connect', (client) => {
    const query = client.query.bind(client);
    client.query = (...args) => {
      const p = query(...args);
      if (p && typeof p.then === 'function') {
        p.then((result) => countCompletion(args[0], result), () => {});
      }
      return p;
    };
  });
  // An idle client's error (the server going away) must not end the process before Java hears about it.
  pool.on('error', (e) => process.stderr.write(`pool error: ${e.message}\n`));
  return pool;
}

// graphile-worker's default pool size when given a connection string; the runner's LISTEN client comes from it too.
const workerPool = makePool(10);
// The producer's own connection: what another process adding jobs would use.
const producerPool = makePool(1);
await runMigrations({ pgPool: producerPool, schema, logger });
const utils = await makeWorkerUtils({ pgPool: producerPool, schema, logger });

let onJob = () => {};
const taskList = { [TASK]: async (payload) => onJob(payload) };

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([promise, new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  })]).finally(() => clearTimeout(timer));
}

async function fill(base, items) {
  for (let from = 0; from < items; from += FILL_CHUNK) {
    const specs = [];
    for (let i = from; i < Math.min(items, from + FILL_CHUNK); i++) {
      specs.push({ identifier: TASK, payload: { i: base + i } });
    }
    await utils.addJobs(specs);
  }
}

function preset(batched) {
  // Batched: a local queue of 100 (jobs fetched and locked a hundred at a time) and completions written together
  // (completeJobBatchDelay 0: whatever completed meanwhile goes in the next DELETE), as graphile-worker documents for
  // throughput. Otherwise its defaults: one get_job per job, one DELETE per completion.
  return batched ? { worker: { localQueue: { size: BATCH }, completeJobBatchDelay: 0 } } : {};
}

async function startRunner(batched, events) {
  return run({ pgPool: workerPool, schema, logger, concurrency: CONCURRENCY, noHandleSignals: true, taskList,
    events, preset: preset(batched) });
}

// One drain of `items` jobs numbered base..base+items-1 by a fresh runner; returns when every completion is written.
async function drainOnce(base, items, batched) {
  const seen = new Uint16Array(items);
  let foreign = 0;
  onJob = (payload) => {
    const k = payload.i - base;
    if (k >= 0 && k < items) {
      seen[k]++;
    } else {
      foreign++;
    }
  };
  const finished = new Promise((resolve) => {
    completions.target = items;
    completions.done = 0;
    completions.resolve = resolve;
  });
  const events = new EventEmitter();
  let started = 0n;
  // The clock starts when the worker pool exists and its workers are about to ask for jobs: option handling and the
  // migration check of run() are not draining, as a pgdurable provider's start is not timed either.
  events.once('pool:create', () => { started = now(); });
  const called = now();
  const runner = await startRunner(batched, events);
  try {
    await withTimeout(finished, WAIT_LIMIT_MS, `draining ${items} jobs`);
  } finally {
    await runner.stop();
  }
  const end = completions.at;
  let missing = 0;
  let twice = 0;
  for (const n of seen) {
    if (n === 0) missing++;
    else if (n > 1) twice++;
  }
  return { seconds: Number(end - (started || called)) / 1e9, startupMs: Number((started || called) - called) / 1e6,
    completed: completions.done, missing, twice, foreign };
}

async function left() {
  const r = await producerPool.query(`select count(*)::int as n from ${pg.escapeIdentifier(schema)}._private_jobs`);
  return { left: r.rows[0].n };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function wake({ jobs, warmUp, minGapMs, maxGapMs, base }) {
  const total = warmUp + jobs;
  const startedAt = new Array(total).fill(null);
  let waiting = null;
  onJob = (payload) => {
    const at = now();
    const k = payload.i - base;
    if (k >= 0 && k < total && startedAt[k] === null) {
      startedAt[k] = at;
      if (waiting && waiting.k === k) {
        waiting.resolve();
      }
    }
  };
  const completed = new Promise((resolve) => {
    completions.target = total;
    completions.done = 0;
    completions.resolve = resolve;
  });
  const events = new EventEmitter();
  const listening = new Promise((resolve) => events.once('pool:listen:success', resolve));
  const runner = await startRunner(false, events);
  const latenciesNanos = [];
  try {
    await withTimeout(listening, WAKE_LIMIT_MS, 'the runner\'s LISTEN');
    await sleep(200); // every worker has asked once, found nothing and waits
    for (let k = 0; k < total; k++) {
      await sleep(minGapMs + Math.random() * (maxGapMs - minGapMs));
      const seen = new Promise((resolve) => { waiting = { k, resolve }; });
      await utils.addJob(TASK, { i: base + k });
      const sent = now();
      if (startedAt[k] === null) {
        await withTimeout(seen, WAKE_LIMIT_MS, `job ${k} starting`);
      }
      waiting = null;
      if (k >= warmUp) {
        latenciesNanos.push(Number(startedAt[k] - sent));
      }
    }
    // the last completion is not awaited by its worker: the queue is checked once it is written
    await withTimeout(completed, WAKE_LIMIT_MS, 'the last completion');
  } finally {
    await runner.stop();
  }
  return { latenciesNanos, ...(await left()) };
}

function reply(message) {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

reply({ ready: true, version, node: process.version });
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  let command;
  try {
    command = JSON.parse(line);
    if (command.cmd === 'quit') break;
    const handler = {
      fill: ({ base, items }) => fill(base, items).then(() => ({})),
      drain: ({ base, items, batched }) => drainOnce(base, items, batched),
      left,
      wake,
    }[command.cmd];
    if (!handler) throw new Error(`unknown command ${command.cmd}`);
    reply({ ok: true, ...(await handler(command)) });
  } catch (e) {
    reply({ ok: false, error: String(e && e.stack || e) });
  }
}
await utils.release();
await workerPool.end();
await producerPool.end();
