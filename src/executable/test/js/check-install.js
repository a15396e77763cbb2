// Whether node_modules holds every package package-lock.json pins, at the pinned version. Run by the Java fixture
// (NodeRuntime) with the node it chose, before deciding to run `npm ci`: a lock file changed after the last install
// must not leave the tests on the old packages. Prints one line per problem and exits 10 when there is any (any
// other non-zero exit is this script failing).
'use strict';
const fs = require('fs');
const path = require('path');

const dir = __dirname;
const lock = JSON.parse(fs.readFileSync(path.join(dir, 'package-lock.json'), 'utf8'));
const problems = [];
for (const [where, entry] of Object.entries(lock.packages || {})) {
  if (!where.startsWith('node_modules/') || entry.link) {
    continue;
  }
  const manifest = path.join(dir, where, 'package.json');
  let installed;
  try {
    installed = JSON.parse(fs.readFileSync(manifest, 'utf8')).version;
  } catch (e) {
    // npm skips optional packages for other platforms; their absence is what npm ci leaves too
    if (!entry.optional) {
      problems.push(`missing ${where} ${entry.version}`);
    }
    continue;
  }
  if (installed !== entry.version) {
    problems.push(`${where} is ${installed}, package-lock.json pins ${entry.version}`);
  }
}
if (problems.length > 0) {
  console.log(problems.join('\n'));
  process.exit(10);
}
console.log('installed');
