import { tsChildLaunch } from '@libos/examples';
import {
  IMAGE_READ_RIGHT,
  imageResource,
  type ProcessView,
  SPAWN_RESOURCE,
  SPAWN_RIGHT,
} from '@libos/protocol';
import { type AdminClient, ProcessClient } from '@libos/sdk';
import type { Command } from 'commander';
import { type EmbeddedCluster, startEmbedded } from '../cluster/embedded.js';
import { freePort } from '../cluster/redis-server.js';
import { stopSignals } from '../cluster/signals.js';
import { readClusterFile, stateDir } from '../cluster/state-dir.js';
import { adminClient, type GlobalOptions } from '../context.js';
import { emit, paint, paintStatus } from '../output.js';
import { processTree } from './ps.js';

interface DemoOptions {
  children: string;
  leaves: string;
  workers: string;
  keep?: boolean;
}

/** A running cluster to use: --url/LIBOS_URL, a healthy `libos up` here, else none. */
async function existingCluster(global: GlobalOptions): Promise<string | undefined> {
  const candidate = global.url ?? process.env.LIBOS_URL ?? (await readClusterFile(stateDir(global.dir)))?.url;
  if (!candidate) return undefined;
  try {
    return (await fetch(`${candidate}/healthz`)).ok ? candidate : undefined;
  } catch {
    return undefined;
  }
}

async function registerImages(admin: AdminClient): Promise<void> {
  const worker = tsChildLaunch('demo-worker');
  const leaf = tsChildLaunch('echo');
  await admin.putImage('demo-worker', {
    ...worker,
    kind: 'demo',
    deadline_ms: 60_000,
    cancel_grace_ms: 2_000,
  });
  await admin.putImage('demo-leaf', { ...leaf, kind: 'echo', deadline_ms: 30_000 });
}

/** Prints the children's progress messages as they arrive, until `stop` aborts. */
async function followProgress(parent: ProcessClient, stop: AbortSignal, log: (line: string) => void) {
  while (!stop.aborted) {
    try {
      const page = await parent.receive({ channel: 'progress', limit: 50 }, { signal: stop });
      for (const m of page.messages) log(`  ${paint('grey', '▸')} ${m.sender} ${m.body ?? ''}`);
    } catch (error) {
      if (stop.aborted) return;
      throw error;
    }
  }
}

/** Everything in the tree under `root`, for the final picture. */
async function treeOf(admin: AdminClient, root: string): Promise<ProcessView[]> {
  const all: ProcessView[] = [];
  let cursor: string | undefined;
  do {
    const page = await admin.listProcesses({ limit: 1000, ...(cursor ? { cursor } : {}) });
    all.push(...page.processes.filter((p) => p.root_pid === root));
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  return all;
}

export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description(
      'the tour: a fan-out of children that message their parent, one spawns grandchildren; wait, merge, show the tree',
    )
    .option('--children <n>', 'children to fan out', '8')
    .option('--leaves <n>', 'grandchildren the first child spawns', '3')
    .option('--workers <n>', 'workers of the embedded cluster (when none is running)', '2')
    .option('--keep', 'leave the embedded cluster running afterwards')
    .action(async (opts: DemoOptions) => {
      const global = program.opts<GlobalOptions>();
      const say = (line: string) => {
        if (!global.json) process.stdout.write(`${line}\n`);
      };
      let embedded: EmbeddedCluster | undefined;
      let url = await existingCluster(global);
      let kept = false;
      if (!url) {
        say(paint('bold', 'Starting an embedded cluster (redis-server with AOF, a coordinator, workers)…'));
        // Its parts run in their own process groups: Ctrl-C stops them here (a second one kills them).
        const signals = stopSignals();
        const cluster = await startEmbedded({
          dir: stateDir(global.dir),
          workers: Number(opts.workers),
          port: Number(process.env.LIBOS_PORT ?? (await freePort())),
          stdio: 'ignore',
        });
        signals.up();
        void signals.first.then(async (signal) => {
          process.stderr.write(`stopping (${signal})…\n`);
          await cluster.stop();
          process.exit(kept ? 0 : 130);
        });
        embedded = cluster;
        url = embedded.url;
      }
      try {
        const admin = await adminClient({
          ...global,
          url,
          ...(embedded ? { adminToken: embedded.adminToken } : {}),
        });
        await registerImages(admin);
        const count = Number(opts.children);
        const leaves = Number(opts.leaves);
        const root = await admin.createProcess({
          goal: 'libos demo: fan out, collect, merge',
          // Each child takes one unit of `children`, and the first reserves its grandchildren's too.
          resource_budget: { children: count + leaves, wall_ms: 10 * 60_000, tokens: 100_000 },
        });
        const parent = new ProcessClient({ url, token: root.token! });
        say(
          `root ${paint('bold', root.pid)} (caller-driven) fans out ${count} children on image demo-worker`,
        );

        const spawned = [];
        for (let item = 0; item < count; item++) {
          const withLeaves = item === 0 && leaves > 0;
          spawned.push(
            await parent.spawn({
              goal: `item ${item}${withLeaves ? ` with ${leaves} grandchildren` : ''}`,
              image: 'demo-worker',
              input: { item, work_ms: 150 + 50 * (item % 4), leaves: withLeaves ? leaves : 0 },
              resource_budget: {
                wall_ms: 60_000,
                tokens: 5_000,
                steps: 10,
                children: withLeaves ? leaves : 0,
              },
              ...(withLeaves
                ? {
                    inherit_capabilities: [
                      { resource: SPAWN_RESOURCE, rights: [SPAWN_RIGHT] },
                      { resource: imageResource('demo-leaf'), rights: [IMAGE_READ_RIGHT] },
                    ],
                  }
                : {}),
            }),
          );
        }

        const stop = new AbortController();
        const progress = followProgress(parent, stop.signal, say);
        const collecting = Promise.all(
          spawned.map(async (child) => {
            const done = await parent.wait({ child_pid: child.pid });
            const payload = done.result_oid
              ? (await parent.readObject({ oid: done.result_oid })).payload
              : null;
            say(
              `  ${paint('grey', '■')} ${child.pid} ${paintStatus(done.status)} ${paint('grey', preview(payload))}`,
            );
            return { pid: child.pid, status: done.status, outcome: done.outcome, result: payload };
          }),
        );
        // However collecting ends, the progress follower stops with it.
        const results = await collecting.finally(async () => {
          stop.abort();
          await progress.catch(() => undefined);
        });
        // The results are read above: merging now adopts the children's remaining roots.
        const merges = [];
        for (const child of spawned)
          merges.push({ pid: child.pid, ...(await parent.merge({ child_pid: child.pid })) });
        await parent.exit({ payload: { results: results.map((r) => r.result) } });

        const tree = await treeOf(admin, root.pid);
        const ok = results.filter((r) => r.status === 'exited').length;
        const dashboard = embedded && !opts.keep ? undefined : `${url}/admin/queues`;
        const consoleUrl = embedded && !opts.keep ? undefined : `${url}/ui/#/tree/${root.pid}`;
        emit(
          global.json,
          { root: root.pid, results, merges, tree, ...(dashboard ? { dashboard, console: consoleUrl } : {}) },
          () =>
            [
              '',
              processTree(tree, { budgets: true }),
              '',
              paint(
                'grey',
                'budgets are used/limit; a parent counts its subtree: its wall_ms is the sum of its children’s wall time, which ran in parallel',
              ),
              `${paint(ok === count ? 'green' : 'red', `${ok}/${count} children exited`)}; results read, then merged.`,
              embedded && !opts.keep
                ? 'this cluster stops now: `libos demo --keep` leaves it up (with its dashboard)'
                : [
                    `console:   ${consoleUrl} (log in with the admin token in ${stateDir(global.dir)}/admin-token)`,
                    `dashboard: ${url}/admin/queues (user admin, password: the admin token)`,
                  ].join('\n'),
            ].join('\n'),
        );
        if (ok !== count) process.exitCode = 1;
      } finally {
        if (embedded && !opts.keep) await embedded.stop();
        else if (embedded) say(`the cluster keeps running at ${url}; stop it with Ctrl-C`);
      }
      kept = true;
      if (embedded && opts.keep) await embedded.exited;
    });
}

/** A result's JSON on one line, cut to fit beside its pid. */
function preview(payload: unknown): string {
  if (payload === null || payload === undefined) return '';
  const text = JSON.stringify(payload);
  return text.length > 72 ? `${text.slice(0, 71)}…` : text;
}
