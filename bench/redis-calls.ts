// What each child costs Redis in calls: the commands each part sends per trivial `sh` child (its
// round trips), with every script named, and the commands those scripts run inside Redis. Read
// through MONITOR on a whole cluster as `libos up` runs it (Redis over loopback TCP, so each
// client's port names its process), for a round through the SDK (spawn + wait per child) and one
// through the batch tools (spawn_children / wait_children × 100). MONITOR slows Redis: the counts
// are the figure here, not the time.
//   npm run build && node --import tsx --conditions=@libos/source bench/redis-calls.ts [--children N] [--isolation auto|none]
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { scriptNames } from '@libos/kernel';
import * as bullScripts from 'bullmq/dist/esm/scripts/index.js';
import type { Redis } from 'ioredis';
import { clusterPids, startBenchCluster } from './lib/cluster.js';
import { CHILD_SCRIPTS, clusterBatchThroughput, clusterThroughput } from './lib/loops.js';
import { tcpPorts } from './lib/proc.js';

const { values } = parseArgs({
  options: {
    children: { type: 'string', default: '300' },
    isolation: { type: 'string', default: 'none' },
  },
});
const N = Number(values.children);
const isolation = values.isolation as 'auto' | 'none';

/** Script names by SHA-1: the kernel's, and BullMQ's (`addStandardJob-9` → `bullmq addStandardJob`). */
const names = new Map(scriptNames());
for (const script of Object.values(bullScripts) as Array<{ name?: string; content?: string }>) {
  if (!script.name || !script.content) continue;
  names.set(
    createHash('sha1').update(script.content).digest('hex'),
    `bullmq ${script.name.replace(/-\d+$/, '')}`,
  );
}

/** A command as counted: a script by name, anything else by its name (a key's ids left out). */
function label(args: readonly string[]): string {
  const command = (args[0] ?? '').toLowerCase();
  if (command === 'evalsha') return names.get(args[1] ?? '') ?? `evalsha ${args[1]?.slice(0, 8)}`;
  if (command === 'eval')
    return `eval ${createHash('sha1')
      .update(args[1] ?? '')
      .digest('hex')
      .slice(0, 8)}`;
  return command;
}

/** A command run inside a script, with its key's shape (`libos:#:p:#`): ids are '#'. */
function inner(args: readonly string[]): string {
  const key = (args[1] ?? '')
    .split(':')
    .map((part) => (/\d/.test(part) && part.length > 6 ? '#' : part))
    .join(':');
  return `${(args[0] ?? '').toLowerCase()} ${key}`;
}

type Counts = Map<string, number>;
const add = (counts: Counts, key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);

const cluster = await startBenchCluster({ via: 'tcp', isolation });
const report: Record<string, unknown> = { children: N, isolation };
const out: string[] = [
  `Redis calls per trivial sh child (${N} a round), isolation ${isolation}; cluster as libos up runs it, Redis over loopback TCP\n`,
];
try {
  await cluster.admin.putImage('stamp', {
    command: 'sh',
    args: [CHILD_SCRIPTS.stamp, '{result_file}'],
    deadline_ms: 30_000,
  });
  // Warm: every part has made its connections (a part's new connection would be unnamed).
  await clusterThroughput(cluster, 'stamp', 20);
  await clusterBatchThroughput(cluster, 'stamp', 20, 10);
  const pids = await clusterPids(cluster);
  const partOfPort = new Map<number, string>();
  const own = (pid: number | undefined, part: string) => {
    if (pid !== undefined) for (const port of tcpPorts(pid)) partOfPort.set(port, part);
  };
  own(pids.coordinator, 'coordinator');
  for (const worker of pids.workers) own(worker, 'workers');
  own(process.pid, 'caller');

  const rounds = [
    ['SDK: spawn + wait per child', () => clusterThroughput(cluster, 'stamp', N)],
    ['batch tools: spawn_children / wait_children × 100', () => clusterBatchThroughput(cluster, 'stamp', N)],
  ] as const;
  for (const [title, round] of rounds) {
    const sent = new Map<string, Counts>();
    const inside: Counts = new Map();
    const client = cluster.redisClient() as Redis;
    const monitor = await client.monitor();
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source === 'lua') return add(inside, inner(args));
      const port = Number(source.split(':').pop());
      const part = partOfPort.get(port) ?? 'other';
      const counts = sent.get(part) ?? new Map();
      add(counts, label(args));
      sent.set(part, counts);
    });
    await round();
    await monitor.disconnect();
    client.disconnect();

    const perChild = (n: number) => +(n / N).toFixed(2);
    out.push(`\n### ${title}\n\n| part | command | per child |\n| --- | --- | ---: |`);
    let total = 0;
    const byPart: Record<string, Record<string, number>> = {};
    for (const part of ['caller', 'coordinator', 'workers', 'other']) {
      const counts = sent.get(part);
      if (!counts) continue;
      byPart[part] = {};
      let partTotal = 0;
      for (const [command, n] of [...counts].sort((a, b) => b[1] - a[1])) {
        partTotal += n;
        byPart[part][command] = perChild(n);
        if (n / N >= 0.05) out.push(`| ${part} | ${command} | ${perChild(n)} |`);
      }
      total += partTotal;
      out.push(`| ${part} | **all** | **${perChild(partTotal)}** |`);
    }
    out.push(`| **all parts** | | **${perChild(total)}** |`);
    const insideTotal = [...inside.values()].reduce((sum, n) => sum + n, 0);
    out.push(
      `\nInside scripts: **${perChild(insideTotal)}** commands a child; the most frequent:\n\n| command and key | per child |\n| --- | ---: |`,
    );
    for (const [command, n] of [...inside].sort((a, b) => b[1] - a[1]).slice(0, 12)) {
      out.push(`| ${command} | ${perChild(n)} |`);
    }
    report[title] = {
      sent: byPart,
      total: perChild(total),
      inside: perChild(insideTotal),
      insideTop: Object.fromEntries([...inside].map(([k, n]) => [k, perChild(n)])),
    };
  }
} finally {
  await cluster.stop();
}
process.stdout.write(`${out.join('\n')}\n`);
await writeFile(
  new URL(
    `./results/redis-calls${isolation === 'none' ? '' : `-isolation-${isolation}`}.json`,
    import.meta.url,
  ),
  `${JSON.stringify(report, null, 2)}\n`,
);
