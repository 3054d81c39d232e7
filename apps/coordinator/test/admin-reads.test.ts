import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, type Harness, raw, startHarness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ LIBOS_TREE_MAX_NODES: '6' });
});
afterAll(async () => {
  await h.stop();
});

const get = (path: string, token = ADMIN_TOKEN) => raw(h.coordinator.url, path, { token });
const tool = (token: string, name: string, body: unknown) =>
  raw(h.coordinator.url, `/v1/tools/${name}`, { method: 'POST', token, body: JSON.stringify(body) });

describe('admin reads over HTTP', () => {
  it('reads a mailbox without acknowledging, its objects, its tree and a description', async () => {
    await h.admin.putImage('echo', { command: 'sh', args: ['-c', 'exit 0', 'sh', '{result_file}'] });
    const root = await h.admin.createProcess({ goal: 'reads', image: 'echo' });
    const me = h.as(root.token!);
    const sent = await me.send({ to: 'self', body: 'hello', channel: 'progress' });
    const object = await me.createObject({ payload: { a: 1 } });
    for (let i = 0; i < 11; i++) await me.spawn({ goal: `child ${i}` });

    for (let i = 0; i < 2; i++) {
      const mail = await h.admin.processMessages(root.pid, { channel: 'progress' });
      expect(mail.messages).toEqual([
        expect.objectContaining({
          message_id: sent.message_id,
          body: 'hello',
          acked: false,
          sender: root.pid,
        }),
      ]);
      expect(mail.unacked_count).toBe(1);
    }
    const objects = await h.admin.processObjects(root.pid);
    expect(objects.objects).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ oid: object.oid, owned: true, handle: 'rw', size_bytes: 7 }),
      ]),
    );
    const tree = await h.admin.processTree(root.pid);
    // LIBOS_TREE_MAX_NODES=6 caps it: the root and its first five children, in numeric order
    expect(tree).toMatchObject({ truncated: true, max_nodes: 6 });
    expect(tree.nodes.map((n) => n.pid)).toEqual([
      root.pid,
      ...[1, 2, 3, 4, 5].map((n) => `${root.pid}.${n}`),
    ]);
    const described = await h.admin.describeProcess(root.pid);
    expect(described).toMatchObject({
      process: { pid: root.pid, status: 'running' },
      children: { total: 11, by_status: { runnable: 11 } },
      mailbox: { unacked_count: 1, first_unread: [{ body: 'hello' }] },
      attempts: [],
    });
    const listed = await h.admin.listProcesses({ root: root.pid, limit: 3 });
    expect(listed.processes.map((p) => p.pid)).toEqual([`${root.pid}.11`, `${root.pid}.10`, `${root.pid}.9`]);
    const parent = await h.admin.listProcesses({ parent: root.pid, limit: 100 });
    expect(parent.processes).toHaveLength(11);
    const roots = await h.admin.listProcesses({ roots: 'true', limit: 1000 });
    expect(roots.processes.map((p) => p.pid)).toContain(root.pid);
    expect(roots.processes.every((p) => p.parent_pid === null)).toBe(true);
  });

  it('answers 404 for an unknown pid, 400 for a bad query, 401/403 without the admin token', async () => {
    for (const read of ['messages', 'objects', 'tree', 'describe']) {
      const missing = await get(`/v1/admin/processes/pmissing1.4/${read}`);
      expect([read, missing.status, missing.body]).toEqual([
        read,
        404,
        // the message may say more (a never-created pid may also be one deleted after retention)
        { error: { code: 'not_found', message: expect.stringMatching(/^no such process pmissing1\.4\b/) } },
      ]);
      const bad = await get(`/v1/admin/processes/not-a-pid/${read}`);
      expect(bad.status).toBe(400);
      expect((await raw(h.coordinator.url, `/v1/admin/processes/pmissing1/${read}`)).status).toBe(401);
      const root = await h.admin.createProcess({ goal: 'x' });
      expect((await get(`/v1/admin/processes/${root.pid}/${read}`, root.token!)).status).toBe(403);
    }
    expect((await get('/v1/admin/processes/pmissing1/messages?kind=loud')).status).toBe(400);
    expect((await get('/v1/admin/processes/pmissing1/tree?max_nodes=0')).status).toBe(400);
    expect((await get('/v1/admin/processes?created_after=yesterday')).body).toMatchObject({
      error: { code: 'invalid_argument' },
    });
    expect((await get('/v1/admin/processes?cursor=junk')).status).toBe(400);
  });

  it('declares the reads in /openapi.json with every status they answer', async () => {
    const doc = (await get('/openapi.json')).body as {
      paths: Record<string, { get?: { responses: Record<string, unknown> } }>;
    };
    for (const read of ['messages', 'objects', 'tree', 'describe']) {
      const path = doc.paths[`/v1/admin/processes/{pid}/${read}`];
      expect(Object.keys(path?.get?.responses ?? {}).sort()).toEqual([
        '200',
        '400',
        '401',
        '403',
        '404',
        '408',
        '414',
        '431',
        '500',
        '503',
      ]);
    }
  });
});

describe('notices on a refused tool call', () => {
  it('ride in the error envelope: interrupts for a non-message call, normal ones for any', async () => {
    const root = await h.admin.createProcess({ goal: 'notices' });
    const token = root.token!;
    const me = h.as(token);
    // (the interrupt first: a notice due as a call begins rides on that call's own answer)
    const interrupt = await me.send({ to: 'self', kind: 'interrupt', body: 'stop' });
    const normal = await me.send({ to: 'self', body: 'fyi' });
    // a refused message tool (bad arguments: 400) takes the normal notice, not the interrupt
    const badRead = await tool(token, 'read_process_messages', { limit: -1 });
    expect(badRead.status).toBe(400);
    expect(badRead.body).toMatchObject({
      error: { code: 'invalid_argument', notices: [{ kind: 'normal', message_ids: [normal.message_id] }] },
    });
    // a refused non-message call (a kernel refusal: no handle, 403) carries the interrupt
    const missing = await tool(token, 'read_object', { oid: `${root.pid}/o999` });
    expect(missing.status).toBe(403);
    expect(missing.body).toMatchObject({
      error: {
        code: 'permission_denied',
        notices: [{ kind: 'interrupt', message_ids: [interrupt.message_id], text: expect.any(String) }],
      },
    });
    // each notice once: the next refusal carries none
    const again = await tool(token, 'read_object', { oid: `${root.pid}/o999` });
    expect((again.body as { error: object }).error).not.toHaveProperty('notices');
    // the messages themselves were not acknowledged
    expect((await h.admin.processMessages(root.pid)).unacked_count).toBe(2);
  });
});
