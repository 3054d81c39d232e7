// Where the cluster's CPU goes: CPU time (user + system, from /proc) that each part spends per
// trivial child while 2 workers × 4 run a batch of sh children: the coordinator, each worker,
// and this process as the service that spawns and waits. A guide for cutting per-child work.
//   npm run build && node --import tsx --conditions=@libos/source bench/cluster-cpu.ts [--children N]
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Cluster } from '@libos/e2e';

const { values } = parseArgs({ options: { children: { type: 'string', default: '300' } } });
const N = Number(values.children);
const STAMP = fileURLToPath(new URL('./children/stamp.sh', import.meta.url));
process.env.E2E_FROM_DIST = '1';

/** CPU milliseconds a process has used (utime + stime; clock ticks are 10 ms on Linux). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const cluster = await Cluster.start({ workers: 2, concurrency: 4, fsync: 'everysec' });
try {
  await cluster.admin.putImage('stamp', {
    command: 'sh',
    args: [STAMP, '{result_file}'],
    deadline_ms: 30_000,
  });
  const { client } = await cluster.root('cpu', { goal: 'cpu', resource_budget: { children: N + 10 } });
  const parts: Record<string, number> = {
    coordinator: cluster.coordinator!.pid!,
    'worker 1': cluster.workers[0]!.pid!,
    'worker 2': cluster.workers[1]!.pid!,
    'service (this process)': process.pid,
  };
  const before = Object.fromEntries(Object.entries(parts).map(([name, pid]) => [name, cpuMs(pid)]));
  const started = performance.now();
  const children = [];
  for (let i = 0; i < N; i += 16) {
    const batch = Array.from({ length: Math.min(16, N - i) }, () =>
      client.spawn({ goal: 'x', image: 'stamp' }),
    );
    children.push(...(await Promise.all(batch)));
  }
  await Promise.all(children.map((child) => client.wait({ child_pid: child.pid })));
  const seconds = (performance.now() - started) / 1000;
  process.stdout.write(`${N} children at ${(N / seconds).toFixed(1)}/s\n`);
  for (const [name, pid] of Object.entries(parts)) {
    process.stdout.write(
      `${name.padEnd(24)} ${((cpuMs(pid) - before[name]!) / N).toFixed(2)} ms CPU per child\n`,
    );
  }
} finally {
  await cluster.stop();
}
