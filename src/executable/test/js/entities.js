'use strict';
// node entities.js PORT [SCENARIO ...]
// Durable entities with Microsoft's Durable Task JavaScript SDK against a pgdurable sidecar on 127.0.0.1:PORT.
// Prints one line per scenario on stdout ("PASS name" or "FAIL name: why") and "MEASURE name value" lines for the
// figures the JUnit test reports. Exits 0 when all passed.

const { TaskEntity, EntityInstanceId } = require('@microsoft/durabletask-js');
const {
  client, worker, check, equal, finished, output, OrchestrationStatus, checkNames, runScenarios, runMain,
} = require('./common');

class Counter extends TaskEntity {
  initializeState() {
    return 0;
  }

  add(n) {
    this.state += n;
    return this.state;
  }

  get() {
    return this.state;
  }

  boom() {
    throw new Error(`counter refuses at ${this.state}`);
  }

  // Signals another counter (an entity's own action).
  forward(target) {
    this.context.signalEntity(new EntityInstanceId('counter', target.key), 'add', target.amount);
    return this.state;
  }
}

async function* useCounter(ctx, key) {
  const id = new EntityInstanceId('counter', key);
  const afterAdd = yield ctx.entities.callEntity(id, 'add', 10);
  ctx.entities.signalEntity(id, 'add', 1);
  const now = yield ctx.entities.callEntity(id, 'get');
  let failure;
  try {
    yield ctx.entities.callEntity(id, 'boom');
  } catch (e) {
    failure = String(e.message);
  }
  return { afterAdd, now, failure };
}

// Moves 5 from l1 to l2 inside a critical section, and holds the locks until the event 'go'.
async function* transfer(ctx) {
  const from = new EntityInstanceId('counter', 'l1');
  const to = new EntityInstanceId('counter', 'l2');
  const lock = yield ctx.entities.lockEntities(to, from);
  const left = yield ctx.entities.callEntity(from, 'add', -5);
  const arrived = yield ctx.entities.callEntity(to, 'add', 5);
  yield ctx.waitForExternalEvent('go');
  lock.release();
  return [left, arrived];
}

// Ends (fails) inside a critical section without releasing it: the sidecar releases the lock.
async function* lockAndFail(ctx) {
  yield ctx.entities.lockEntities(new EntityInstanceId('counter', 'l3'));
  throw new Error('failing while holding a lock');
}

async function* scheduledSignal(ctx) {
  ctx.entities.signalEntity(new EntityInstanceId('counter', 's1'), 'add', 1,
    { signalTime: new Date(ctx.currentUtcDateTime.getTime() + 3600 * 1000) });
  return 'sent';
}

/** Re-reads the entity until its state is `expected`; returns the milliseconds it took. */
async function stateBecomes(c, id, expected, timeoutMs = 30000) {
  const start = Date.now();
  for (;;) {
    const m = await c.getEntity(id);
    if (m && JSON.stringify(m.state) === JSON.stringify(expected)) {
      return Date.now() - start;
    }
    if (Date.now() - start > timeoutMs) {
      throw new Error(`entity ${id} did not reach state ${JSON.stringify(expected)} within ${timeoutMs} ms; `
        + `it is ${m ? JSON.stringify(m.state) : 'absent'}`);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
}

const scenarios = {
  async 'client-signal-get'(c) {
    const id = new EntityInstanceId('counter', 'c1');
    check((await c.getEntity(id)) === undefined, 'an entity never signalled must not exist');
    for (let i = 1; i <= 5; i++) {
      await c.signalEntity(id, 'add', i);
    }
    await stateBecomes(c, id, 15);
    const m = await c.getEntity(id);
    equal(m.id.toString(), '@counter@c1', 'entity id');
    check(m.lastModifiedTime instanceof Date && m.lastModifiedTime.getTime() > 0, 'lastModifiedTime set');
    const noState = await c.getEntity(id, false);
    check(noState !== undefined && noState.includesState === false, 'getEntity without state');
    // Sequential round trips: one signal, then polling until the state shows it.
    const rounds = 20;
    let total = 0;
    for (let i = 1; i <= rounds; i++) {
      await c.signalEntity(id, 'add', 1);
      total += await stateBecomes(c, id, 15 + i);
    }
    console.log(`MEASURE signal-to-state-ms ${(total / rounds).toFixed(1)}`);
  },

  async 'orchestration-call-signal'(c) {
    const inst = await c.scheduleNewOrchestration('useCounter', 'o1');
    const out = output(await finished(c, inst, OrchestrationStatus.COMPLETED));
    equal(out.afterAdd, 10, 'result of the call');
    equal(out.now, 11, 'state after the signal (operations of one entity run in order)');
    check(out.failure && out.failure.includes('counter refuses at 11'), `failed call reported: ${out.failure}`);
    await stateBecomes(c, new EntityInstanceId('counter', 'o1'), 11);
  },

  async 'entity-signals-entity'(c) {
    await c.signalEntity(new EntityInstanceId('counter', 'from'), 'forward', { key: 'to', amount: 7 });
    await stateBecomes(c, new EntityInstanceId('counter', 'to'), 7);
  },

  async 'serialised-concurrent-signals'(c) {
    const id = new EntityInstanceId('counter', 'busy');
    const n = 200;
    const start = Date.now();
    await Promise.all(Array.from({ length: n }, () => c.signalEntity(id, 'add', 1)));
    const acceptedMs = Date.now() - start;
    await stateBecomes(c, id, n, 60000);
    const ms = Date.now() - start;
    console.log(`MEASURE concurrent-signals-accepted-ms ${acceptedMs}`);
    console.log(`MEASURE concurrent-signals-applied-ms ${ms}`);
    console.log(`MEASURE concurrent-signals-per-s ${(n * 1000 / ms).toFixed(0)}`);
  },

  async 'query-and-clean'(c) {
    for (const k of ['q1', 'q2', 'q3']) {
      await c.signalEntity(new EntityInstanceId('counter', k), 'add', 1);
    }
    for (const k of ['q1', 'q2', 'q3']) {
      await stateBecomes(c, new EntityInstanceId('counter', k), 1);
    }
    const found = [];
    for await (const m of c.getEntities({ instanceIdStartsWith: 'counter@q', pageSize: 2 })) {
      found.push([m.id.toString(), m.state]);
    }
    equal(found, [['@counter@q1', 1], ['@counter@q2', 1], ['@counter@q3', 1]], 'query by prefix, two pages');
    await c.signalEntity(new EntityInstanceId('counter', 'q2'), 'delete');
    const deadline = Date.now() + 30000;
    while ((await c.getEntity(new EntityInstanceId('counter', 'q2'))) !== undefined) {
      check(Date.now() < deadline, 'the deleted entity still has state after 30 s');
      await new Promise((r) => setTimeout(r, 10));
    }
    const cleaned = await c.cleanEntityStorage();
    equal(cleaned.emptyEntitiesRemoved, 1, 'empty entities removed');
    const rest = [];
    for await (const m of c.getEntities({ instanceIdStartsWith: 'counter@q', includeTransient: true })) {
      rest.push(m.id.toString());
    }
    equal(rest, ['@counter@q1', '@counter@q3'], 'entities left after cleaning');
  },

  async 'critical-section'(c) {
    const l1 = new EntityInstanceId('counter', 'l1');
    const l2 = new EntityInstanceId('counter', 'l2');
    await c.signalEntity(l1, 'add', 10);
    await stateBecomes(c, l1, 10);
    const inst = await c.scheduleNewOrchestration('transfer');
    await stateBecomes(c, l2, 5); // both calls ran: the orchestration now holds both locks, waiting for 'go'
    const locked = await c.getEntity(l1);
    equal(locked.lockedBy, inst, 'l1 is locked by the orchestration');
    // A signal from outside the critical section waits for the unlock.
    await c.signalEntity(l1, 'add', 100);
    const deadline = Date.now() + 30000;
    for (;;) {
      const m = await c.getEntity(l1);
      equal(m.state, 5, 'l1 state while locked');
      if (m.backlogQueueSize === 1) {
        break;
      }
      check(Date.now() < deadline, 'the signal to the locked entity was not held back within 30 s');
      await new Promise((r) => setTimeout(r, 10));
    }
    await c.raiseOrchestrationEvent(inst, 'go', true);
    equal(output(await finished(c, inst, OrchestrationStatus.COMPLETED)), [5, 5], 'results inside the section');
    // At once, even before the entity's next batch carried the unlock out: its holder has ended.
    const atCompletion = await c.getEntity(l1);
    check(atCompletion.lockedBy === undefined || atCompletion.lockedBy === '',
      `l1 still shown locked by ${atCompletion.lockedBy} after its holder completed`);
    await stateBecomes(c, l1, 105); // unlocked: the waiting signal ran
    const after = await c.getEntity(l1);
    check(after.lockedBy === undefined || after.lockedBy === '', `l1 still locked by ${after.lockedBy}`);
  },

  async 'lock-released-when-its-orchestration-fails'(c) {
    const l3 = new EntityInstanceId('counter', 'l3');
    await c.signalEntity(l3, 'add', 1);
    await stateBecomes(c, l3, 1);
    const inst = await c.scheduleNewOrchestration('lockAndFail');
    await finished(c, inst, OrchestrationStatus.FAILED);
    await c.signalEntity(l3, 'add', 1);
    await stateBecomes(c, l3, 2); // runs: the failed orchestration's lock was let go
    const m = await c.getEntity(l3);
    check(m.lockedBy === undefined || m.lockedBy === '', `l3 still locked by ${m.lockedBy}`);
  },

  async 'scheduled-signal-from-orchestration-fails-clearly'(c) {
    const inst = await c.scheduleNewOrchestration('scheduledSignal');
    const state = await finished(c, inst, OrchestrationStatus.FAILED);
    const message = state.failureDetails && state.failureDetails.message;
    check(message && message.includes('scheduled'), `failure names the unsupported scheduled signal: ${message}`);
  },
};

async function main() {
  const [port, ...only] = process.argv.slice(2);
  const names = only.length ? only : Object.keys(scenarios);
  checkNames(scenarios, names);
  const w = worker(port, (r) => {
    r.addNamedEntity('counter', () => new Counter());
    r.addNamedOrchestrator('useCounter', useCounter);
    r.addNamedOrchestrator('transfer', transfer);
    r.addNamedOrchestrator('lockAndFail', lockAndFail);
    r.addNamedOrchestrator('scheduledSignal', scheduledSignal);
  });
  await runScenarios(w, client(port), scenarios, names);
}

runMain(main);
