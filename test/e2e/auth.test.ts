import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_TOKEN,
  bearer,
  Cluster,
  eventually,
  type RawAnswer,
  READ_REQUEST,
  rawRequest,
  refusalOf,
  type Scratch,
  scratch,
  shImage,
  waitForFile,
  writeResult,
} from '../src/index.js';

let cluster: Cluster;
let files: Scratch;

/** What a refused request must not have changed: every process's generation and status, the images. */
async function snapshot() {
  const { processes } = await cluster.admin.listProcesses({ limit: 1000 });
  const images = await cluster.admin.listImages();
  return {
    processes: processes.map((p) => [p.pid, p.status, p.state_generation]).sort(),
    images: images.map((i) => i.name).sort(),
  };
}

/** The code (and reason, when given) of a refusal, with its HTTP status. */
function refused(answer: RawAnswer) {
  const refusal = refusalOf(answer);
  return {
    status: answer.status,
    code: refusal?.code,
    ...(refusal?.reason ? { reason: refusal.reason } : {}),
  };
}

const tool = (name: string, auth: string | undefined, body: unknown = {}) =>
  rawRequest(cluster.url, 'POST', `/v1/tools/${name}`, { ...(auth ? { auth } : {}), body });

/** A child that writes its own token where the test can take it, then waits to be released. */
async function tokenOf(pid: string): Promise<string> {
  return eventually(
    async () => {
      const [token] = await files.lines(`${pid}.token`);
      return token;
    },
    { withinMs: 30_000, what: `the token of ${pid}` },
  );
}

beforeAll(async () => {
  files = await scratch();
  cluster = await Cluster.start({ workers: 1 });
  await cluster.admin.putImage('holder', {
    ...shImage(
      `${READ_REQUEST}; printf '%s\\n' "$LIBOS_TOKEN" > "$2/$LIBOS_PID.tmp"; mv "$2/$LIBOS_PID.tmp" "$2/$LIBOS_PID.token"; ${waitForFile('$2/$LIBOS_PID.go')}; ${writeResult('"status":"completed","output":"released"')}`,
      files.dir,
    ),
  });
});
afterAll(async () => {
  const strays = await cluster?.stop();
  await files?.remove();
  expect(strays ?? []).toEqual([]);
});

describe('requests the coordinator refuses, changing nothing', () => {
  it('no token, a wrong token, a sibling’s token, a process token on admin routes', async () => {
    const parent = await cluster.root('owns two children');
    const [a, b] = await Promise.all(
      ['a', 'b'].map((name) => parent.client.spawn({ goal: `hold ${name}`, image: 'holder' })),
    );
    const tokenA = await tokenOf(a!.pid);
    await tokenOf(b!.pid);
    expect(tokenA.startsWith(`${a!.pid}.`)).toBe(true);
    // The child's token is live: it can act as itself.
    expect((await tool('get_process', bearer(tokenA))).status).toBe(200);
    const before = await snapshot();

    // No token at all.
    expect(refused(await tool('get_process', undefined))).toMatchObject({
      status: 401,
      code: 'unauthenticated',
    });
    expect(
      refused(await tool('signal_child_process', undefined, { child_pid: a!.pid, signal: 'terminate' })),
    ).toMatchObject({ status: 401, code: 'unauthenticated' });
    for (const [method, path] of [
      ['GET', '/v1/admin/processes'],
      ['GET', '/admin/queues'],
    ] as const) {
      expect(refused(await rawRequest(cluster.url, method, path))).toMatchObject({
        status: 401,
        code: 'unauthenticated',
      });
    }
    expect(
      refused(
        await rawRequest(cluster.url, 'PUT', '/v1/admin/images/sneaky', {
          body: { command: 'sh', args: ['{result_file}'] },
        }),
      ),
    ).toMatchObject({ status: 401, code: 'unauthenticated' });

    // Wrong tokens: a forged secret for a real pid, the parent's token altered, nonsense, the admin token as a process.
    const forged = `${a!.pid}.${'0'.repeat(64)}`;
    const altered = `${parent.token.slice(0, -1)}${parent.token.endsWith('a') ? 'b' : 'a'}`;
    for (const token of [forged, altered, 'nonsense', ADMIN_TOKEN]) {
      expect(refused(await tool('get_process', bearer(token))), token).toMatchObject({
        status: 401,
        code: 'unauthenticated',
      });
      expect(
        refused(
          await tool('signal_child_process', bearer(token), { child_pid: b!.pid, signal: 'terminate' }),
        ),
      ).toMatchObject({ status: 401 });
    }
    expect(
      refused(await rawRequest(cluster.url, 'GET', '/v1/admin/processes', { auth: bearer('nonsense') })),
    ).toMatchObject({
      status: 403,
      code: 'permission_denied',
    });

    // A child's token against its sibling: not its child, whatever the tool.
    const sibling = b!.pid;
    for (const [name, body] of [
      ['wait_child_process', { child_pid: sibling, block: false }],
      ['signal_child_process', { child_pid: sibling, signal: 'terminate' }],
      ['signal_child_process', { child_pid: sibling, signal: 'pause' }],
      ['send_process_message', { to: sibling, body: 'hello sibling' }],
      ['get_process', { pid: sibling }],
      ['merge_child_memory', { child_pid: sibling }],
      ['list_child_processes', {}],
    ] as const) {
      const answer = await tool(name, bearer(tokenA), body);
      if (name === 'list_child_processes') {
        // allowed, but shows only A's own (no) children
        expect(answer.body).toMatchObject({ children: [] });
        continue;
      }
      expect(refused(answer), name).toMatchObject({
        status: 403,
        code: 'permission_denied',
        reason: 'not_direct_child',
      });
    }

    // Process tokens on admin routes: the parent's and a child's.
    for (const token of [parent.token, tokenA]) {
      for (const [method, path, body] of [
        ['GET', '/v1/admin/processes', undefined],
        ['GET', `/v1/admin/processes/${a!.pid}`, undefined],
        ['POST', '/v1/admin/processes', { goal: 'a root of my own' }],
        ['POST', `/v1/admin/processes/${sibling}/signal`, { signal: 'terminate' }],
        ['PUT', '/v1/admin/images/sneaky', { command: 'sh', args: ['{result_file}'] }],
        ['GET', '/admin/queues', undefined],
        ['GET', '/admin/queues/api/queues', undefined],
      ] as const) {
        const answer = await rawRequest(cluster.url, method, path, { auth: bearer(token), body });
        expect(refused(answer), `${method} ${path}`).toMatchObject({
          status: 403,
          code: 'permission_denied',
        });
      }
    }

    expect(await snapshot()).toEqual(before);
    for (const child of [a!, b!]) {
      expect((await cluster.admin.getProcess(child.pid)).status).toBe('running');
      await files.touch(`${child.pid}.go`);
      expect(await parent.client.wait({ child_pid: child.pid })).toMatchObject({ status: 'exited' });
    }
  });

  it('authenticates a tool call before it looks at the body: no token is 401 whatever the body', async () => {
    const before = await snapshot();
    // Admin routes already answer 401 here; tool routes must too (a request without a token is
    // refused as unauthenticated, not as malformed).
    for (const body of [undefined, { nope: 1 }]) {
      const answer = await rawRequest(cluster.url, 'POST', '/v1/tools/spawn_child_process', { body });
      expect(refused(answer), JSON.stringify(body)).toMatchObject({ status: 401, code: 'unauthenticated' });
      const forged = await rawRequest(cluster.url, 'POST', '/v1/tools/spawn_child_process', {
        auth: bearer('nonsense'),
        body,
      });
      expect(refused(forged), JSON.stringify(body)).toMatchObject({ status: 401, code: 'unauthenticated' });
    }
    expect(await snapshot()).toEqual(before);
  });

  it('a tool whose arguments are all optional takes a request without a body', async () => {
    const caller = await cluster.root('asks about itself without a body');
    const answer = await rawRequest(cluster.url, 'POST', '/v1/tools/get_process', {
      auth: bearer(caller.token),
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body).toMatchObject({ pid: caller.pid, status: 'running' });
  });

  it('the token of a terminal process is dead: a launched child’s and a caller-driven root’s', async () => {
    const parent = await cluster.root('outlives its child');
    const child = await parent.client.spawn({ goal: 'hold and end', image: 'holder' });
    const token = await tokenOf(child.pid);
    expect((await tool('send_process_message', bearer(token), { to: 'parent', body: 'alive' })).status).toBe(
      200,
    );
    await files.touch(`${child.pid}.go`);
    expect(await parent.client.wait({ child_pid: child.pid })).toMatchObject({ status: 'exited' });

    const ended = await cluster.root('ends itself');
    expect(await ended.client.exit({ payload: { done: true } })).toMatchObject({ status: 'exited' });

    const before = await snapshot();
    for (const dead of [token, ended.token]) {
      for (const [name, body] of [
        ['get_process', {}],
        ['send_process_message', { to: 'self', body: 'still here?' }],
        ['create_object', { payload: 1 }],
        ['process_exit', { failed: true, reason: 'again' }],
      ] as const) {
        expect(refused(await tool(name, bearer(dead), body)), name).toMatchObject({
          status: 401,
          code: 'unauthenticated',
        });
      }
    }
    expect(await snapshot()).toEqual(before);
    const { messages } = await parent.client.read({ include_acked: true, ack: false });
    expect(messages.map((m) => m.body)).toEqual(['alive']);
  });
});
