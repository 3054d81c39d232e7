import { fileURLToPath } from 'node:url';
import {
  claudeBin,
  claudeOfflineEnv,
  codexBin,
  codexOfflineArgs,
  codexOfflineEnv,
  delegatingModel,
  type ModelServer,
  startModelServer,
} from '@libos/agent-clis';
import { tsChildLaunch } from '@libos/examples';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../src/index.js';

// The whole loop with the real agent CLIs: a real Claude Code child and a real Codex child, each
// run by `libos shim` as the project's images run it, each with the libos MCP server wired in by
// the shim, spawn an echo grandchild through `libos mcp`, wait for it, read its result and put it
// in their answer. Their model is the scripted one on loopback; nothing else is reachable.

const LIBOS_BIN = fileURLToPath(new URL('../../apps/cli/bin/libos.js', import.meta.url));

// examples/images/*.json as `libos images put` stores them (`libos` resolved to this checkout),
// with the CLIs this repository pins.
const shim = (dialect: string, ...extra: string[]) => ({
  command: process.execPath,
  args: [LIBOS_BIN, 'shim', dialect, '--result-file', '{result_file}', ...extra],
  kind: 'explore',
  deadline_ms: 90_000,
});

let cluster: Cluster;
let model: ModelServer;
const turns = [delegatingModel({ image: 'echo', inputs: [{ query: 'ping from the agent' }] })];

beforeAll(async () => {
  model = await startModelServer({ turns });
  cluster = await Cluster.start({
    workers: 1,
    concurrency: 4,
    // Children inherit their worker's environment: the CLIs' model settings ride there.
    workerEnv: { ...claudeOfflineEnv(model.url), ...codexOfflineEnv() },
  });
  await cluster.admin.putImage('echo', { ...tsChildLaunch('echo'), deadline_ms: 30_000 });
  await cluster.admin.putImage('claude', shim('claude', '--command', claudeBin()));
  await cluster.admin.putImage(
    'codex',
    shim('codex', '--command', codexBin(), '--', ...codexOfflineArgs(model.url)),
  );
});

afterAll(async () => {
  await model?.close();
  expect(await cluster?.stop()).toEqual([]);
});

describe.each(['claude', 'codex'])('a real %s child', (image) => {
  it('spawns an echo grandchild through libos mcp, waits for it, reads its result and answers with it', async () => {
    const root = await cluster.root(`drive ${image}`);
    const child = await root.client.spawn({
      goal: `delegate with ${image}`,
      image,
      input: { query: 'ask a child' },
      // What the agent may do through its tools: spawn children of the echo image.
      inherit_capabilities: [
        { resource: 'process:spawn', rights: ['use'] },
        { resource: 'image:echo', rights: ['read'] },
      ],
      resource_budget: { children: 1 },
    });
    const done = await root.client.wait({ child_pid: child.pid });
    const result = done.result_oid
      ? (await root.client.readObject({ oid: done.result_oid })).payload
      : undefined;
    const seen = model.seen
      .slice(-3)
      .map((s) => `${s.served} ${s.request?.toolResults.join(' ').slice(0, 600)}`);
    expect(done.status, `${JSON.stringify(done.outcome)}\n${seen.join('\n')}`).toBe('exited');
    expect(JSON.stringify(result)).toContain('The children answered:');
    expect(JSON.stringify(result)).toContain('ping from the agent');
    // The grandchild is the agent's own child, not the root's, and it exited.
    const { processes } = await cluster.admin.listProcesses({ limit: 500 });
    const grandchildren = processes.filter((p) => p.parent_pid === child.pid);
    expect(grandchildren.map((p) => [p.image, p.status])).toEqual([['echo', 'exited']]);
  });
});

it('a real codex child without process:spawn is offered the libos tools its grants allow, no spawn tools', async () => {
  const offered: string[][] = [];
  const bound = await startModelServer({
    turns: [
      {
        reply: (request) => {
          offered.push(request.tools);
          return { type: 'text', text: 'Nothing to delegate.' };
        },
      },
    ],
  });
  try {
    await cluster.admin.putImage(
      'codex-bound',
      shim('codex', '--command', codexBin(), '--', ...codexOfflineArgs(bound.url)),
    );
    const root = await cluster.root('drive a codex that may not spawn');
    // No inherit_capabilities: the child holds no process:spawn.
    const child = await root.client.spawn({
      goal: 'answer alone',
      image: 'codex-bound',
      input: { query: 'hi' },
    });
    const done = await root.client.wait({ child_pid: child.pid });
    expect(done.status, JSON.stringify(done.outcome)).toBe('exited');
    const tools = offered[0] ?? [];
    expect(tools.some((name) => name.includes('get_process'))).toBe(true);
    expect(tools.some((name) => name.includes('process_exit'))).toBe(true);
    expect(
      tools.filter((name) => /spawn_child_process|fork_child_process|wait_child_process/.test(name)),
    ).toEqual([]);
  } finally {
    await bound.close();
  }
});
