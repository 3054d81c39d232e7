// @ts-check
// The self-fencing watchdog: one per worker, its own OS process, so a worker that is frozen
// (SIGSTOP, a paused VM, a starved event loop) cannot keep its children running past their
// lease. Plain JavaScript with no imports, so it starts in ~40 ms under plain node.
//
// stdin, one JSON object a line, from the worker:
//   {"op":"arm","id":ID,"deadline":MS,"uid":U?,"pgid":P?}  kill ID's processes (uid U, group P)
//                                                 once CLOCK_MONOTONIC passes MS
//   {"op":"target","id":ID,"pgid":P}              ID's launcher leads process group P
//   {"op":"beat","id":ID,"deadline":MS}           the lease was renewed: a new deadline
//   {"op":"disarm","id":ID}                        ID's child is gone: forget it
// stdout, one JSON object a line: {"fired":ID,"late_ms":N,"killed":N} when it killed a launch.
// stdin's EOF (the worker died or closed) kills every armed launch, then the watchdog exits.
// fd 3, when open (a pipe from the worker while this runs under its spawner): `beat` lines
// straight from the worker; its EOF (the worker died) kills every armed launch too.
import { createReadStream, fstatSync, readdirSync, readFileSync } from 'node:fs';

/** @type {Map<string, {deadline: number, uid?: number, pgid?: number}>} */
const armed = new Map();
/** The one pending wake-up, for the earliest deadline armed when it was set (none: Infinity). */
/** @type {NodeJS.Timeout | undefined} */
let timer;
let timerDue = Number.POSITIVE_INFINITY;

const now = () => Number(process.hrtime.bigint() / 1_000_000n);

/** @param {number} pid @param {NodeJS.Signals} signal */
function signal(pid, signal) {
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Every live process whose real uid is in `uids` (each sandbox has a uid of its own). @param {Set<number>} uids */
function processesOf(uids) {
  /** @type {number[]} */
  const found = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      const line = /\nUid:\s+(\d+)/.exec(status);
      if (line && uids.has(Number(line[1])) && !/\nState:\s+Z/.test(status)) found.push(Number(name));
    } catch {}
  }
  return found;
}

/**
 * Kills every overdue launch at once: first each launcher's process group (its death ends the
 * sandbox's pid namespace, so every descendant), then whatever of their uids is left, in one
 * pass over /proc per round rather than one per launch.
 * @param {{uid?: number, pgid?: number}[]} targets
 */
function kill(targets) {
  let killed = 0;
  for (const target of targets) if (target.pgid !== undefined && signal(-target.pgid, 'SIGKILL')) killed += 1;
  const uids = new Set(targets.flatMap((target) => (target.uid === undefined ? [] : [target.uid])));
  // Repeated while a pass finds a process not signalled yet (one may fork while the list is
  // read); a killed one may still be listed for a moment while it exits.
  /** @type {Set<number>} */
  const signalled = new Set();
  for (let round = 0; uids.size > 0 && round < 20; round += 1) {
    const fresh = processesOf(uids).filter((pid) => !signalled.has(pid));
    if (fresh.length === 0) break;
    for (const pid of fresh) {
      signalled.add(pid);
      if (signal(pid, 'SIGKILL')) killed += 1;
    }
  }
  return killed;
}

function check() {
  const at = now();
  const due = [...armed].filter(([, entry]) => at >= entry.deadline);
  if (due.length === 0) return;
  for (const [id] of due) armed.delete(id);
  const killed = kill(due.map(([, entry]) => entry));
  const done = now();
  for (const [id, entry] of due) {
    process.stdout.write(`${JSON.stringify({ fired: id, late_ms: done - entry.deadline, killed })}\n`);
  }
}

/**
 * Keeps one timer set for the earliest deadline. A timer already due sooner is left: a beat or a
 * disarm only moves deadlines later or drops them, so it wakes early, finds nothing due and sets
 * the next. Its check runs after the input that came meanwhile is read (setImmediate follows the
 * poll phase): a watchdog that was itself starved for a while judges by the beats that arrived
 * meanwhile, not by the deadlines it held before them. A beat is a renewal the kernel granted, so
 * it never makes a deadline later than the lease allows.
 */
function schedule() {
  let earliest = Number.POSITIVE_INFINITY;
  for (const entry of armed.values()) if (entry.deadline < earliest) earliest = entry.deadline;
  if (earliest >= timerDue) return;
  clearTimeout(timer);
  timerDue = earliest;
  timer = setTimeout(
    () => {
      timer = undefined;
      timerDue = Number.POSITIVE_INFINITY;
      setImmediate(() => {
        check();
        schedule();
      });
    },
    // setTimeout holds at most 2^31-1 ms; a later deadline is reached by waking then.
    Math.min(2 ** 31 - 1, Math.max(0, earliest - now())),
  );
}

/** @param {string} line @param {boolean} [beatsOnly] */
function handle(line, beatsOnly = false) {
  /** @type {{op?: string, id?: string, deadline?: number, uid?: number, pgid?: number}} */
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    return;
  }
  const { op, id } = message;
  if (typeof id !== 'string' || (beatsOnly && op !== 'beat')) return;
  if (op === 'arm' && typeof message.deadline === 'number') {
    armed.set(id, {
      deadline: message.deadline,
      ...(typeof message.uid === 'number' ? { uid: message.uid } : {}),
      ...(typeof message.pgid === 'number' ? { pgid: message.pgid } : {}),
    });
  } else if (op === 'target' && typeof message.pgid === 'number') {
    const entry = armed.get(id);
    if (entry) entry.pgid = message.pgid;
  } else if (op === 'beat' && typeof message.deadline === 'number') {
    const entry = armed.get(id);
    if (entry && message.deadline > entry.deadline) entry.deadline = message.deadline;
  } else if (op === 'disarm') {
    armed.delete(id);
  }
  schedule();
}

/** @param {NodeJS.ReadableStream} stream @param {boolean} beatsOnly */
function readLines(stream, beatsOnly) {
  let pending = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => {
    pending += chunk;
    let newline = pending.indexOf('\n');
    while (newline >= 0) {
      handle(pending.slice(0, newline), beatsOnly);
      pending = pending.slice(newline + 1);
      newline = pending.indexOf('\n');
    }
  });
  stream.on('end', () => {
    kill([...armed.values()]);
    process.exit(0);
  });
}
readLines(process.stdin, false);
let beats = false;
try {
  const stat = fstatSync(3); // Node's stdio pipes are socket pairs
  beats = stat.isFIFO() || stat.isSocket();
} catch {}
if (beats) readLines(createReadStream('', { fd: 3 }), true);
// The worker may die by SIGKILL: stdin's EOF still comes. A signal meant for the worker's
// group must not end the watchdog before the worker has stopped its children.
for (const name of /** @type {NodeJS.Signals[]} */ (['SIGINT', 'SIGTERM', 'SIGHUP']))
  process.on(name, () => undefined);
