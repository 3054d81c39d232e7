import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  asSelf,
  Cluster,
  eventually,
  numberFromRequest,
  READ_REQUEST,
  type Scratch,
  scratch,
  shImage,
  waitForFile,
  wordFromRequest,
  writeResult,
} from '../src/index.js';

const FAN = 20;
let cluster: Cluster;
let files: Scratch;

beforeAll(async () => {
  files = await scratch();
  cluster = await Cluster.start({ workers: 2, concurrency: 12 });
  // Greets its parent, waits for "go-<group>", then reads its own mailbox and completes with it.
  await cluster.admin.putImage('chatty', {
    ...shImage(
      [
        READ_REQUEST,
        numberFromRequest('n'),
        wordFromRequest('group'),
        asSelf(
          'send_process_message',
          '{"to":"parent","channel":"hello","correlation_id":"c%s","body":"hello from %s"}',
          '"$n"',
          '"$n"',
        ),
        'echo "$n" >> "$2/sent"',
        waitForFile('$2/go-$group', 0.2),
        `inbox=$(${asSelf('read_process_messages', '{"channel":"orders"}')})`,
        writeResult('"status":"completed","output":{"n":%s,"inbox":%s}', '"$n"', '"$inbox"'),
      ].join('; '),
      files.dir,
    ),
  });
});
afterAll(async () => {
  const strays = await cluster?.stop();
  await files?.remove();
  expect(strays ?? []).toEqual([]);
});

/** Everything the crash must not lose, read through the coordinator (retried while it reconnects). */
async function durableState(parent: Awaited<ReturnType<Cluster['root']>>, results: string[]) {
  return eventually(
    async () => {
      const { processes } = await cluster.admin.listProcesses({ limit: 1000 });
      const mailbox = await parent.client.read({ include_acked: true, ack: false, limit: 100 });
      const objects = await Promise.all(results.map((oid) => cluster.admin.readObject(oid)));
      return {
        processes: processes
          .map((p) => ({
            pid: p.pid,
            status: p.status,
            generation: p.state_generation,
            outcome: p.outcome,
            result: p.result_oid,
            wait: p.wait_state,
          }))
          .sort((x, y) => x.pid.localeCompare(y.pid)),
        mailbox: mailbox.messages.map((m) => [m.message_id, m.sender, m.body, m.acked]),
        objects: objects.map((o) => [o.oid, o.payload, o.version]),
      };
    },
    { withinMs: 30_000, what: 'the coordinator to answer again' },
  );
}

describe('a crash of Redis (AOF) in the middle of a fan-out with messages', () => {
  it('loses no process, outcome or message', async () => {
    const parent = await cluster.root('fan out through a Redis crash');
    const children = await Promise.all(
      Array.from({ length: FAN }, (_, n) =>
        parent.client.spawn({
          goal: `chat ${n}`,
          image: 'chatty',
          input: { n, group: n < FAN / 2 ? 'a' : 'b' },
        }),
      ),
    );
    // Orders to every child, queued in their mailboxes before they read them.
    const orders = await Promise.all(
      children.map((child, n) =>
        parent.client.send({ to: child.pid, channel: 'orders', correlation_id: `o${n}`, body: `order ${n}` }),
      ),
    );
    await eventually(async () => ((await files.lines('sent')).length === FAN ? true : undefined), {
      withinMs: 30_000,
      what: 'every child to greet its parent',
    });

    // Group a finishes before the crash; group b is running through it.
    await files.touch('go-a');
    const early = await Promise.all(
      children.slice(0, FAN / 2).map((c) => parent.client.wait({ child_pid: c.pid })),
    );
    expect(early.every((w) => w.status === 'exited')).toBe(true);
    const results = early.map((w) => w.result_oid ?? '');
    const before = await durableState(parent, results);
    expect(before.mailbox).toHaveLength(FAN);
    expect(before.processes.filter((p) => p.pid !== parent.pid && p.status === 'running')).toHaveLength(
      FAN / 2,
    );

    await cluster.redis.crash!();
    const after = await durableState(parent, results);
    expect(after).toEqual(before);

    await files.touch('go-b');
    const late = await Promise.all(
      children.slice(FAN / 2).map((c) => parent.client.wait({ child_pid: c.pid })),
    );
    const answers = [...early, ...late];
    for (const [n, answer] of answers.entries()) {
      expect(answer, `child ${n}`).toMatchObject({ status: 'exited', outcome: { type: 'completed' } });
      const { payload } = await parent.client.readObject({ oid: answer.result_oid ?? '' });
      // Each child read the order sent to it before the crash, exactly once.
      expect(payload, `child ${n}`).toMatchObject({
        n,
        inbox: {
          messages: [{ message_id: orders[n]!.message_id, body: `order ${n}`, sender: parent.pid }],
          has_more: false,
        },
      });
    }
    const greetings = await parent.client.read({ channel: 'hello', limit: 100 });
    expect(greetings.messages.map((m) => m.body).sort()).toEqual(
      Array.from({ length: FAN }, (_, n) => `hello from ${n}`).sort(),
    );
    expect(new Set(greetings.messages.map((m) => m.sender))).toEqual(new Set(children.map((c) => c.pid)));
  });
});
