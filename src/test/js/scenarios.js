'use strict';
// node scenarios.js PORT [SCENARIO ...]
// Runs the scenarios (all by default) with Microsoft's Durable Task JavaScript SDK against a pgdurable sidecar on
// 127.0.0.1:PORT, one after the other, and prints one line per scenario on stdout: "PASS name" or "FAIL name: why".
// Exits 0 when all passed. Orchestrators are async generator functions: the SDK runs only those as orchestrations.

const { whenAll } = require('@microsoft/durabletask-js');
const {
  client, worker, statusName, check, equal, finished, reachesStatus, output, OrchestrationStatus,
} = require('./common');

async function* chain(ctx, n) {
  let x = yield ctx.callActivity('addOne', n);
  x = yield ctx.callActivity('addOne', x);
  x = yield ctx.callActivity('addOne', x);
  return x;
}

async function* fanOut(ctx, n) {
  const tasks = [];
  for (let i = 1; i <= n; i++) {
    tasks.push(ctx.callActivity('square', i));
  }
  const squares = yield whenAll(tasks);
  return squares.reduce((a, b) => a + b, 0);
}

async function* nap(ctx, seconds) {
  const before = ctx.currentUtcDateTime.getTime();
  yield ctx.createTimer(seconds);
  return ctx.currentUtcDateTime.getTime() - before; // orchestration time: when the timer fired
}

async function* approval(ctx) {
  const who = yield ctx.waitForExternalEvent('approve');
  return `approved by ${who}`;
}

async function* parent(ctx, n) {
  const child = yield ctx.callSubOrchestrator('chain', n);
  return `child said ${child}`;
}

async function* counter(ctx, n) {
  if (n < 3) {
    ctx.continueAsNew(n + 1, false);
    return undefined;
  }
  return `counted to ${n}`;
}

async function* failing(ctx) {
  return yield ctx.callActivity('refuse', 'order-9');
}

const scenarios = {
  async 'activity-chain'(c) {
    const id = await c.scheduleNewOrchestration('chain', 10);
    equal(output(await finished(c, id, OrchestrationStatus.COMPLETED)), 13, 'output');
  },

  async 'fan-out-fan-in'(c) {
    const id = await c.scheduleNewOrchestration('fanOut', 5);
    equal(output(await finished(c, id, OrchestrationStatus.COMPLETED)), 55, 'sum of squares 1..5');
  },

  async timer(c) {
    const started = Date.now();
    const id = await c.scheduleNewOrchestration('nap', 1);
    const waited = output(await finished(c, id, OrchestrationStatus.COMPLETED));
    check(waited >= 1000, `the timer fired after ${waited} ms of orchestration time, before its second`);
    check(Date.now() - started >= 1000, 'the orchestration finished before its timer was due');
  },

  async 'external-event'(c) {
    const id = await c.scheduleNewOrchestration('approval');
    await c.waitForOrchestrationStart(id, false, 30);
    await c.raiseOrchestrationEvent(id, 'approve', 'ada');
    equal(output(await finished(c, id, OrchestrationStatus.COMPLETED)), 'approved by ada', 'output');
  },

  async 'sub-orchestration'(c) {
    const id = await c.scheduleNewOrchestration('parent', 1);
    equal(output(await finished(c, id, OrchestrationStatus.COMPLETED)), 'child said 4', 'output');
  },

  async 'continue-as-new'(c) {
    const id = await c.scheduleNewOrchestration('counter', 0);
    const state = await finished(c, id, OrchestrationStatus.COMPLETED);
    equal(output(state), 'counted to 3', 'output');
    equal(JSON.parse(state.serializedInput), 3, 'input of the last generation');
  },

  async 'activity-failure'(c) {
    const id = await c.scheduleNewOrchestration('failing');
    const state = await finished(c, id, OrchestrationStatus.FAILED);
    check(state.failureDetails && state.failureDetails.message.includes('out of stock: order-9'),
      `failure details: ${JSON.stringify(state.failureDetails)}`);
  },

  async terminate(c) {
    const id = await c.scheduleNewOrchestration('approval');
    await c.waitForOrchestrationStart(id, false, 30);
    await c.terminateOrchestration(id, 'stopped by the test');
    equal(output(await finished(c, id, OrchestrationStatus.TERMINATED)), 'stopped by the test', 'output');
  },

  async 'suspend-resume'(c) {
    const id = await c.scheduleNewOrchestration('approval');
    await c.waitForOrchestrationStart(id, false, 30);
    await c.suspendOrchestration(id);
    await reachesStatus(c, id, OrchestrationStatus.SUSPENDED);
    // Raised while suspended: kept for after the resume, not acted on now.
    await c.raiseOrchestrationEvent(id, 'approve', 'grace');
    const state = await c.getOrchestrationState(id, false);
    equal(statusName(state.runtimeStatus), 'SUSPENDED', 'status after an event raised while suspended');
    await c.resumeOrchestration(id);
    equal(output(await finished(c, id, OrchestrationStatus.COMPLETED)), 'approved by grace', 'output');
  },
};

async function main() {
  const [port, ...wanted] = process.argv.slice(2);
  const names = wanted.length ? wanted : Object.keys(scenarios);
  for (const n of names) {
    if (!scenarios[n]) {
      throw new Error(`unknown scenario ${n}; known: ${Object.keys(scenarios).join(', ')}`);
    }
  }
  const w = worker(port, (r) => {
    r.addNamedOrchestrator('chain', chain);
    r.addNamedOrchestrator('fanOut', fanOut);
    r.addNamedOrchestrator('nap', nap);
    r.addNamedOrchestrator('approval', approval);
    r.addNamedOrchestrator('parent', parent);
    r.addNamedOrchestrator('counter', counter);
    r.addNamedOrchestrator('failing', failing);
    r.addNamedActivity('addOne', (ctx, x) => x + 1);
    r.addNamedActivity('square', async (ctx, x) => x * x);
    r.addNamedActivity('refuse', (ctx, order) => { throw new Error(`out of stock: ${order}`); });
  });
  const c = client(port);
  await w.start();
  let failed = 0;
  try {
    for (const n of names) {
      try {
        await scenarios[n](c);
        console.log(`PASS ${n}`);
      } catch (e) {
        failed++;
        console.log(`FAIL ${n}: ${String(e && e.stack ? e.stack : e).replace(/\n/g, ' | ')}`);
      }
    }
  } finally {
    await w.stop().catch((e) => console.error('stopping the worker:', e));
    await c.stop().catch((e) => console.error('stopping the client:', e));
  }
  process.exitCode = failed ? 1 : 0;
}

main().catch((e) => {
  console.log(`FAIL setup: ${String(e && e.stack ? e.stack : e).replace(/\n/g, ' | ')}`);
  process.exitCode = 2;
});
