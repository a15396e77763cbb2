'use strict';
// Shared by the end-to-end scripts: an SDK client and worker pointed at a pgdurable sidecar on 127.0.0.1, the SDK's
// logs on stderr (stdout carries only the scripts' own result lines, which the JUnit test reads).

const { TaskHubGrpcClient, TaskHubGrpcWorker, OrchestrationStatus } = require('@microsoft/durabletask-js');

const logger = {
  error: (m, ...a) => console.error('[sdk error]', m, ...a),
  warn: (m, ...a) => console.error('[sdk warn]', m, ...a),
  info: (m, ...a) => console.error('[sdk info]', m, ...a),
  debug: () => {},
};

// The SDK takes "host:port" (no scheme). 127.0.0.1 rather than localhost: the sidecar binds IPv4 loopback.
function address(port) {
  if (!/^\d+$/.test(String(port))) {
    throw new Error(`expected the sidecar's port as the first argument, got ${port}`);
  }
  return `127.0.0.1:${port}`;
}

function client(port) {
  return new TaskHubGrpcClient({ hostAddress: address(port), logger });
}

function worker(port, register) {
  const w = new TaskHubGrpcWorker({ hostAddress: address(port), logger, shutdownTimeoutMs: 5000 });
  register(w);
  return w;
}

function statusName(s) {
  return OrchestrationStatus[s] ?? String(s);
}

function check(condition, message) {
  if (!condition) {
    throw new Error(message);
  }
}

function equal(actual, expected, what) {
  check(JSON.stringify(actual) === JSON.stringify(expected),
    `${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}

/** Waits for a terminal state (bounded) and checks it; returns the state. */
async function finished(c, id, expectedStatus, timeoutSeconds = 30) {
  const state = await c.waitForOrchestrationCompletion(id, true, timeoutSeconds);
  check(state !== undefined, `instance ${id} not found`);
  equal(statusName(state.runtimeStatus), statusName(expectedStatus),
    `status of ${id}${state.failureDetails ? ` (failure: ${state.failureDetails.message})` : ''}`);
  return state;
}

/** Re-reads the instance until its status is `expected` (suspend and resume take effect in a later turn). */
async function reachesStatus(c, id, expected, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  let state;
  for (;;) {
    state = await c.getOrchestrationState(id, false);
    if (state && statusName(state.runtimeStatus) === statusName(expected)) {
      return state;
    }
    if (Date.now() > deadline) {
      throw new Error(`instance ${id} did not become ${statusName(expected)} within ${timeoutMs} ms; it is `
        + `${state ? statusName(state.runtimeStatus) : 'not found'}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

function output(state) {
  return state.serializedOutput === undefined || state.serializedOutput === '' ? undefined
    : JSON.parse(state.serializedOutput);
}

/** An error on one line of stdout: its stack (or message) with the newlines folded. */
function oneLine(e) {
  return String(e && e.stack ? e.stack : e).replace(/\n/g, ' | ');
}

/** Fails before anything runs when a name is not one of the scenarios. */
function checkNames(scenarios, names) {
  for (const n of names) {
    if (!scenarios[n]) {
      throw new Error(`unknown scenario ${n}; known: ${Object.keys(scenarios).join(', ')}`);
    }
  }
}

/**
 * Starts the worker, runs the named scenarios one after the other with the client, prints "PASS name" or
 * "FAIL name: why" for each, stops both, and sets the exit code: 0 when all passed, 1 otherwise.
 */
async function runScenarios(w, c, scenarios, names) {
  await w.start();
  let failed = 0;
  try {
    for (const n of names) {
      try {
        await scenarios[n](c);
        console.log(`PASS ${n}`);
      } catch (e) {
        failed++;
        console.log(`FAIL ${n}: ${oneLine(e)}`);
      }
    }
  } finally {
    await w.stop().catch((e) => console.error('stopping the worker:', e));
    await c.stop().catch((e) => console.error('stopping the client:', e));
  }
  process.exitCode = failed ? 1 : 0;
}

/** Runs a script's main; a failure before any scenario ran prints "FAIL setup: why" and exits 2. */
function runMain(main) {
  main().catch((e) => {
    console.log(`FAIL setup: ${oneLine(e)}`);
    process.exitCode = 2;
  });
}

module.exports = {
  client, worker, statusName, check, equal, finished, reachesStatus, output, OrchestrationStatus, oneLine,
  checkNames, runScenarios, runMain,
};
