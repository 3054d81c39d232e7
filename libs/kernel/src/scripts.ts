import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { fromRedisError, KernelError } from './errors.js';
import { luaList } from './lua-json.js';
import { mastersOf, type RedisClient } from './redis-client.js';
import { type ReplicationOptions, ReplicaWait } from './replica-wait.js';

/** The tree scripts: each is `lib.lua`, the helper modules it needs and its own file; one EVALSHA. */
export const TREE_SCRIPTS = [
  'auth',
  'create_root',
  'spawn',
  'spawn_many',
  'list',
  'get',
  'wait',
  'wait_children',
  'signal',
  'merge',
  'send',
  'read',
  'notices',
  'exit',
  'obj_create',
  'obj_read',
  'obj_write',
  'claim',
  'renew',
  'complete',
  'recover',
  'gc',
  'tree',
  'mail_peek',
  'log_append',
  'log_read',
  'terminate_more',
] as const;
export type TreeScript = (typeof TREE_SCRIPTS)[number];

/**
 * Tree scripts that never write (no `touch`, no handle, no acknowledgement): their answers need no
 * replica confirmation. Every other tree script is a state change and is confirmed (`WAIT`) when
 * LIBOS_REDIS_MIN_REPLICAS is set; a refusal (an error reply) wrote nothing and is not.
 */
export const READ_ONLY_SCRIPTS: ReadonlySet<TreeScript> = new Set([
  'auth',
  'get',
  'list',
  'tree',
  'mail_peek',
  'log_read',
]);

function luaSource(name: string): string {
  return readFileSync(new URL(`./lua/${name}.lua`, import.meta.url), 'utf8');
}

const indexRecordSchema = z.tuple([z.string(), z.number(), z.string(), z.number(), z.number().optional()]);
export type IndexRecord = z.infer<typeof indexRecordSchema>;

/** A global script's number reply (built once: a zod schema per call costs more than the check). */
const numberReply = z.number();

const gcMarkSchema = z.object({ at: z.number(), v: z.number() });
/** A tree's script recorded processes as due for deletion: the earliest may go `at`; `v` the due-set version. */
export type GcMark = z.infer<typeof gcMarkSchema>;

const headSchema = z.looseObject({
  idx: luaList(indexRecordSchema).optional(),
  nd: z.object({ i: z.number(), n: z.number() }).optional(),
  gc: gcMarkSchema.optional(),
  tq: z.boolean().optional(),
});

/** Whether notices are due to a token-proven caller (interrupts, normal messages). */
export interface NoticesDue {
  readonly interrupt: boolean;
  readonly normal: boolean;
}

export interface ScriptReply {
  /** The script's JSON head (its own fields; parse them with a schema). */
  head: Record<string, unknown>;
  /** What followed the head: rows (flat arrays) or strings. */
  rest: unknown[];
  /** Transitions the status index must learn. */
  index: IndexRecord[];
  /** For a call made with a token's proof: the notices due to the caller after it. */
  noticesDue?: NoticesDue;
  /** Processes of the tree became due for deletion (retention). */
  gc?: GcMark;
  /** The tree's cascade of terminal transitions has work left (continue it: `terminate_more`). */
  cascadePending?: boolean;
}

/** Shared helper modules, in dependency order; a script names those it needs on its first line. */
const LIB_MODULES = [
  'caps',
  'budget',
  'objects',
  'retain',
  'terminal',
  'mail',
  'rows',
  'attempts',
  'batch',
  'spawn',
] as const;
const REQUIRES: Record<string, readonly string[]> = {
  objects: ['budget'],
  retain: ['budget', 'objects'],
  terminal: ['budget', 'objects', 'retain'],
  spawn: ['caps', 'budget', 'objects', 'rows'],
};

/** The helper modules a script names on its `-- needs:` line, and what they need. */
function needsOf(body: string): Set<string> {
  const needs = new Set(/^-- needs: (.*)$/m.exec(body)?.[1]?.split(/\s+/) ?? []);
  for (const module of [...needs]) for (const dep of REQUIRES[module] ?? []) needs.add(dep);
  return needs;
}

/**
 * `-- needs: budget objects terminal` -> lib_index.lua (a script may write its own index records)
 * and lib.lua + those modules (and what they need), in order.
 */
export function assemble(name: string, read: (file: string) => string = luaSource): string {
  const body = read(name);
  const needs = needsOf(body);
  const parts = [read('lib_index'), read('lib')];
  for (const module of LIB_MODULES) if (needs.has(module)) parts.push(read(`lib_${module}`));
  parts.push(body);
  return parts.join('\n');
}

/** Scripts on keys of their own (not a tree's): the index and retention shards, their locks. */
const GLOBAL_SCRIPTS = ['index', 'index_drop', 'gc_shard', 'lock', 'claimants'] as const;

let cachedSources: Map<string, string> | undefined;
function sources(): Map<string, string> {
  if (!cachedSources) {
    cachedSources = new Map(TREE_SCRIPTS.map((name) => [name, assemble(name)]));
    for (const name of GLOBAL_SCRIPTS) {
      cachedSources.set(
        name,
        name === 'index' ? `${luaSource('lib_index')}\n${luaSource(name)}` : luaSource(name),
      );
    }
  }
  return cachedSources;
}

/**
 * Tree scripts that may end processes (they include lib_terminal.lua), so may run a cascade of
 * terminal transitions: they take its bound per call, `tb` (LIBOS_TERMINATE_BATCH).
 */
export const TERMINATING_SCRIPTS: ReadonlySet<TreeScript> = new Set(
  TREE_SCRIPTS.filter((name) => needsOf(luaSource(name)).has('terminal')),
);

function sha1(lua: string): string {
  return createHash('sha1').update(lua).digest('hex');
}

/**
 * Each script's name by the SHA-1 EVALSHA runs it by: what SLOWLOG, MONITOR and `SCRIPT` show of
 * the kernel's calls, named (`bench/redis-calls.ts` reads MONITOR with it).
 */
export function scriptNames(): ReadonlyMap<string, string> {
  return new Map([...sources()].map(([name, lua]) => [sha1(lua), name]));
}

/** ioredis's reply when the server does not hold a script (a new connection's server, a restart, a failover). */
function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/** A Lua script and its SHA-1, the name EVALSHA runs it by. */
interface LuaScript {
  lua: string;
  sha: string;
}

/**
 * Runs the Lua scripts on an ioredis client, one server's or a Cluster's (EVALSHA goes to its
 * key's slot). Not through ioredis's `defineCommand`: with auto-pipelining on, every batch ioredis
 * makes copies each defined command onto itself (32 scripts: ~12 µs a batch, ~3 µs a call in a
 * loop of script calls), while EVALSHA is a built-in command and batches as any other.
 */
export class Scripts {
  private readonly scripts = new Map<string, LuaScript>();
  /** Replica confirmation of state changes; undefined when no replicas are asked for. */
  readonly replicas: ReplicaWait | undefined;
  private loading: Promise<void> | undefined;

  constructor(
    private readonly redis: RedisClient,
    replication?: ReplicationOptions,
  ) {
    this.replicas = replication && replication.replicas > 0 ? new ReplicaWait(redis, replication) : undefined;
    for (const [name, lua] of sources()) {
      this.scripts.set(name, { lua, sha: sha1(lua) });
    }
  }

  /** Runs script `name` on `key` (its KEYS[1]); a Redis error becomes a KernelError. */
  private async run(name: string, key: string, args: (string | number)[]): Promise<unknown> {
    const script = this.scripts.get(name);
    if (!script) throw new KernelError('internal', `no script ${name}`);
    try {
      try {
        return await this.redis.evalsha(script.sha, 1, key, ...args);
      } catch (error) {
        if (!isNoScript(error)) throw error;
        // A server without our scripts (new, restarted, promoted): this call loads its own by
        // EVAL, and every master gets them all, so the others' first calls cost no extra trip.
        const answer = this.redis.eval(script.lua, 1, key, ...args);
        this.loadEverywhere();
        return await answer;
      }
    } catch (error) {
      throw fromRedisError(error);
    }
  }

  /** SCRIPT LOAD of every script on every master, once at a time; a failure is left to NOSCRIPT. */
  private loadEverywhere(): void {
    if (this.loading) return;
    const scripts = [...this.scripts.values()];
    this.loading = Promise.all(
      mastersOf(this.redis).map((node) => Promise.all(scripts.map(({ lua }) => node.script('LOAD', lua)))),
    )
      .catch(() => undefined)
      .then(() => {
        this.loading = undefined;
      });
  }

  /**
   * Run a tree script: KEYS[1] = the tree's counter hash, ARGV = [tree base, JSON args]. This is
   * where every state change of every process passes (spawn, exit, send, claim, renew, complete…):
   * with replicas asked for, a script that wrote is answered only once they confirmed it.
   */
  async tree(name: TreeScript, seqKey: string, base: string, args: object): Promise<ScriptReply> {
    const replicas = READ_ONLY_SCRIPTS.has(name) ? undefined : this.replicas;
    const raw = await this.run(name, seqKey, [base, JSON.stringify(args)]);
    if (replicas) await replicas.confirm(`the ${name} script's change`);
    if (!Array.isArray(raw) || typeof raw[0] !== 'string')
      throw new KernelError('internal', `script ${name}: bad reply`);
    const { idx, nd, gc, tq, ...head } = headSchema.parse(JSON.parse(raw[0]));
    return {
      head,
      rest: raw.slice(1),
      index: idx ?? [],
      ...(nd ? { noticesDue: { interrupt: nd.i === 1, normal: nd.n === 1 } } : {}),
      ...(gc ? { gc } : {}),
      ...(tq ? { cascadePending: true } : {}),
    };
  }

  /** Index records, and worker completions to count by outcome type. */
  async index(
    genKey: string,
    base: string,
    records: IndexRecord[],
    counts: Record<string, number> = {},
  ): Promise<void> {
    await this.run('index', genKey, [base, JSON.stringify(records), JSON.stringify(counts)]);
  }

  /** Remove deleted processes from the status and lease indexes. */
  async indexDrop(genKey: string, base: string, pids: string[]): Promise<void> {
    await this.global('index_drop', genKey, base, JSON.stringify(pids));
  }

  /** A retention shard operation (gc_shard.lua): mark, settle. */
  async shard(treesKey: string, base: string, op: string, ...args: (string | number)[]): Promise<number> {
    return numberReply.parse(await this.global('gc_shard', treesKey, base, op, ...args));
  }

  /** Take (or extend) a shard's lock for `ms`; whether this token holds it now (lock.lua). */
  async takeLock(key: string, token: string, ms: number): Promise<boolean> {
    return numberReply.parse(await this.global('lock', key, 'take', token, ms)) === 1;
  }

  /** Release a shard's lock if this token holds it (lock.lua). */
  async releaseLock(key: string, token: string): Promise<void> {
    await this.global('lock', key, 'release', token);
  }

  /** Be a live claimant for `ms` more (claimants.lua); how many are live. */
  async joinClaimants(key: string, token: string, ms: number): Promise<number> {
    return numberReply.parse(await this.global('claimants', key, 'join', token, ms));
  }

  async leaveClaimants(key: string, token: string): Promise<void> {
    await this.global('claimants', key, 'leave', token);
  }

  private global(name: string, key: string, ...args: (string | number)[]): Promise<unknown> {
    return this.run(name, key, args);
  }
}
