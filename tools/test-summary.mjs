#!/usr/bin/env node
// Sums the vitest JSON reports of every package into the one closing line CI reads:
// "N passed, N failed" (", N skipped" when any), after one line per failed test (file, name and
// the first line of its message), so the end of a CI log names what failed. Exits 1 when a
// report counts a failure.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';

const roots = ['libs', 'apps', 'examples', 'test'];
const reports = [];
for (const root of roots) {
  let entries = [];
  try {
    entries = readdirSync(root);
  } catch {
    continue;
  }
  const dirs = root === 'examples' || root === 'test' ? ['.'] : entries;
  for (const dir of dirs) {
    const file = join(root, dir, 'reports', 'vitest.json');
    try {
      if (statSync(file).isFile()) reports.push(file);
    } catch {}
  }
}

let passed = 0;
let failed = 0;
let skipped = 0;
const failures = [];
for (const file of reports) {
  const r = JSON.parse(readFileSync(file, 'utf8'));
  passed += r.numPassedTests ?? 0;
  // A test file that failed with none of its tests failing (it did not load, or a beforeAll or
  // afterAll hook failed) counts as one failure.
  const isBroken = (t) =>
    t.status === 'failed' && !(t.assertionResults ?? []).some((a) => a.status === 'failed');
  const brokenFiles = (r.testResults ?? []).filter(isBroken).length;
  failed += (r.numFailedTests ?? 0) + brokenFiles;
  for (const t of r.testResults ?? []) {
    const where = t.name ?? file;
    const broken = isBroken(t);
    if (broken) failures.push(`${where}: ${firstLine(t.message)}`);
    for (const a of t.assertionResults ?? [])
      if (a.status === 'failed')
        failures.push(`${where} > ${a.fullName}: ${firstLine(a.failureMessages?.[0])}`);
  }
  skipped += (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
  // Errors outside any test (tools/vitest-unhandled-reporter.ts) fail the run too.
  try {
    const u = JSON.parse(readFileSync(join(dirname(file), 'unhandled.json'), 'utf8'));
    for (const e of u.errors ?? []) {
      failed += 1;
      failures.push(`${file}: unhandled ${e.name ?? 'error'}: ${firstLine(e.message)}`);
    }
    if (u.reason === 'failed' && r.success !== false && (u.errors ?? []).length === 0) {
      failed += 1;
      failures.push(`${file}: the run failed outside any test`);
    }
  } catch {}
}
for (const failure of failures) console.log(`FAILED ${failure}`);
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 ? 1 : 0);

function firstLine(text) {
  return String(text ?? '')
    .split('\n')[0]
    .slice(0, 300);
}
