import { startRedis, type TestRedis, uniquePrefix } from '@libos/testkit';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  encodeJournalLine,
  JournalCorrupted,
  type JournalEntry,
  redisJournal,
  Workflow,
} from '../src/index.js';
import { attemptOf, echoRunner } from './workflow-support.js';

function entry(label: string): JournalEntry {
  return {
    call: { kind: 'k', input: { query: label }, label, scope: '' },
    outcome: { type: 'Finished', value: label, attempt: attemptOf(label) },
  };
}

describe('redisJournal', () => {
  let server: TestRedis;
  const clients: Redis[] = [];
  const connect = () => {
    const client = new Redis(server.url);
    client.on('error', () => {}); // reconnects after the crash test are expected
    clients.push(client);
    return client;
  };
  const prefix = uniquePrefix('journal');

  beforeAll(async () => {
    server = await startRedis({ own: true, aof: true });
  });
  afterAll(async () => {
    for (const client of clients) client.disconnect();
    await server.stop();
  });

  it('lets a workflow resumed through another connection replay what finished', async () => {
    const key = `${prefix}resume`;
    const hostA = connect();
    const first = new Workflow({ runner: echoRunner(), journal: await redisJournal({ redis: hostA, key }) });
    await first.agent({ prompt: 'one', kind: 'k' });
    await first.agent({ prompt: 'two', kind: 'k' });
    hostA.disconnect();

    const runner = echoRunner();
    const second = new Workflow({ runner, journal: await redisJournal({ redis: connect(), key }) });
    const results = await Promise.all(
      ['one', 'two', 'three'].map((prompt) => second.agent({ prompt, kind: 'k' })),
    );
    expect(results).toEqual([
      { echo: { query: 'one' } },
      { echo: { query: 'two' } },
      { echo: { query: 'three' } },
    ]);
    expect(runner.calls.map((c) => c.label)).toEqual(['three']);
    expect(second.callsReplayed()).toBe(2);
    expect(await connect().llen(key)).toBe(3);
  });

  it('stores one whole element per append, under concurrency, in the reference line format', async () => {
    const key = `${prefix}concurrent`;
    const redis = connect();
    const journal = await redisJournal({ redis, key });
    const entries = Array.from({ length: 50 }, (_, i) => entry(`e${i}`));
    await Promise.all(entries.map((e) => journal.append(e)));
    const stored = await redis.lrange(key, 0, -1);
    expect(stored).toEqual(entries.map((e) => encodeJournalLine(e).trimEnd()));
    expect((await redisJournal({ redis, key })).prior()).toEqual(entries);
  });

  it('skips metadata elements and refuses a corrupt one with its position', async () => {
    const key = `${prefix}corrupt`;
    const redis = connect();
    await redis.rpush(key, '{"v":1,"created_by":"host-a"}', encodeJournalLine(entry('a')).trimEnd());
    expect((await redisJournal({ redis, key })).prior().map((e) => e.call.label)).toEqual(['a']);
    await redis.rpush(key, '{"v":1,"e":{"call":{"kind":1}}}', encodeJournalLine(entry('b')).trimEnd());
    const error = await redisJournal({ redis, key }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JournalCorrupted);
    expect((error as Error).message).toBe(`journal ${key} is corrupt at line 3`);
  });

  it('keeps acknowledged entries through a Redis crash (appendfsync always)', async () => {
    const key = `${prefix}crash`;
    const redis = connect();
    const journal = await redisJournal({ redis, key });
    await journal.append(entry('before-crash'));
    await server.crash?.();
    const after = connect();
    expect((await redisJournal({ redis: after, key })).prior().map((e) => e.call.label)).toEqual([
      'before-crash',
    ]);
    // The writer's client reconnects and keeps appending to the same list.
    await journal.append(entry('after-crash'));
    expect((await redisJournal({ redis: after, key })).prior().map((e) => e.call.label)).toEqual([
      'before-crash',
      'after-crash',
    ]);
  });
});
