'use strict';
// node graceful-stop.js PORT
// A JavaScript activity in flight while the sidecar stops gracefully. Driven over stdin/stdout by the JUnit test
// (JsSdkEndToEndTest), which owns the sidecar:
//   -> "STARTED <instance id>"    the activity is running (and waits to be released)
//   <- "RELEASE"                  the sidecar is stopping: finish the activity now, inside its grace period
//   <- "RESTARTED <port>"         the stop is over and a new sidecar serves the same task hub on <port>
//   -> "PASS graceful-stop" or "FAIL graceful-stop: why"
// Passing means: the orchestration completes after the restart, the activity ran exactly once (its result, sent
// during the grace period, was committed) and nothing new was handed out during the grace period.

const readline = require('readline');
const {
  client, worker, check, equal, finished, output, OrchestrationStatus, oneLine,
} = require('./common');

const runs = { pack: 0, label: 0 };
let release;
const released = new Promise((resolve) => { release = resolve; });

async function* ship(ctx, order) {
  const packed = yield ctx.callActivity('slowPack', order);
  return yield ctx.callActivity('label', packed);
}

function register(r) {
  r.addNamedOrchestrator('ship', ship);
  r.addNamedActivity('slowPack', async (ctx, order) => {
    runs.pack++;
    console.log(`STARTED ${ctx.orchestrationId}`);
    await released;
    return `packed ${order}`;
  });
  r.addNamedActivity('label', (ctx, packed) => {
    runs.label++;
    return `${packed}, labelled`;
  });
}

const lines = [];
let wake = () => {};
readline.createInterface({ input: process.stdin }).on('line', (l) => { lines.push(l.trim()); wake(); });
async function nextLine() {
  while (lines.length === 0) {
    await new Promise((r) => { wake = r; });
  }
  return lines.shift();
}

async function main() {
  const port = process.argv[2];
  const first = worker(port, register);
  const c1 = client(port);
  await first.start();
  const id = await c1.scheduleNewOrchestration('ship', 'order-42');

  const cmd = await nextLine();
  check(cmd === 'RELEASE', `expected RELEASE, got ${cmd}`);
  release();

  const restarted = await nextLine();
  const m = /^RESTARTED (\d+)$/.exec(restarted);
  check(m, `expected RESTARTED <port>, got ${restarted}`);
  equal(runs.label, 0, 'label runs during the grace period (it became due then and must not be handed out)');
  await first.stop().catch((e) => console.error('stopping the first worker:', e));
  await c1.stop().catch(() => {});

  const second = worker(m[1], register);
  const c2 = client(m[1]);
  await second.start();
  try {
    const state = await finished(c2, id, OrchestrationStatus.COMPLETED);
    equal(output(state), 'packed order-42, labelled', 'output');
    equal(runs.pack, 1, 'slowPack runs (more than one: its result was lost in the stop)');
    equal(runs.label, 1, 'label runs');
  } finally {
    await second.stop().catch((e) => console.error('stopping the second worker:', e));
    await c2.stop().catch(() => {});
  }
  console.log('PASS graceful-stop');
}

main().then(() => process.exit(0), (e) => {
  console.log(`FAIL graceful-stop: ${oneLine(e)}`);
  process.exit(1);
});
