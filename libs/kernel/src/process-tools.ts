import type { InheritedPath, ParsedToolArgs, ProcessView, ToolResult } from '@libos/protocol';
import { z } from 'zod';
import {
  budgetUnits,
  type Caller,
  type CallOptions,
  checkCaller,
  type KernelCore,
  sameTree,
  storedCapability,
  type WakeGate,
} from './core.js';
import { KernelError } from './errors.js';
import { luaList } from './lua-json.js';
import {
  budgetOf,
  field,
  outcomeOf,
  type ProcessRow,
  rowFromFlat,
  statusOf,
  viewOf,
  waitStateOf,
} from './rows.js';

type LaunchArgs = ParsedToolArgs<'spawn_child_process'> & Partial<ParsedToolArgs<'fork_child_process'>>;

const spawnHeadSchema = z.object({
  pid: z.string(),
  roots: luaList(z.object({ oid: z.string(), rights: z.string() })),
});
const waitHeadSchema = z.object({
  ready: z.boolean(),
  result_oid: z.string().optional(),
  withheld: z.literal('data_flow').optional(),
});
const spawnManyHeadSchema = z.object({ pids: luaList(z.string()) });
const waitManyHeadSchema = z.object({
  ready: z.boolean(),
  ended: luaList(z.string()),
  heads: luaList(
    z.object({
      ready: z.boolean(),
      result_oid: z.string().optional(),
      withheld: z.literal('data_flow').optional(),
    }),
  ),
});
const signalHeadSchema = z.object({ launch: z.object({ pid: z.string(), attempt: z.number() }).optional() });
const mergeHeadSchema = z.object({
  merged_oids: luaList(z.string()),
  skipped_oids: luaList(
    z.object({ oid: z.string(), reason: z.enum(['goal', 'not_child_owned', 'released', 'ephemeral']) }),
  ),
});
const exitHeadSchema = z.object({ status: z.string(), result_oid: z.string() });
const rowsSchema = luaList(z.array(z.unknown()));

export function rightsList(held: string): ('read' | 'write')[] {
  const out: ('read' | 'write')[] = [];
  if (held.includes('r')) out.push('read');
  if (held.includes('w')) out.push('write');
  return out;
}

function paths(list: LaunchArgs['inherited_paths']): InheritedPath[] {
  return (list ?? []).map((entry) =>
    typeof entry === 'string'
      ? { path: entry, kind: 'file', access: 'read' }
      : { path: entry.path, kind: entry.kind, access: entry.access },
  );
}

/** The process tools: spawn, fork, list, wait, signal, merge, exit, get. */
export class ProcessTools {
  constructor(private readonly core: KernelCore) {}

  private async launchChild(caller: Caller, args: LaunchArgs, mode: string) {
    const pid = checkCaller(caller);
    for (const oid of args.root_oids ?? []) sameTree(pid, oid);
    const script: Record<string, unknown> = {
      caller: pid,
      mode,
      goal: args.goal,
      paths: paths(args.inherited_paths),
      caps: (args.inherit_capabilities ?? []).map(storedCapability),
      budget: budgetUnits(args.resource_budget),
      object_bytes: this.core.limits.processObjectBytes,
      include_parent_roots: args.include_parent_roots ?? true,
    };
    if (args.input !== undefined) script.input = this.core.json(args.input, 'input');
    if (args.schema !== undefined) script.schema = this.core.json(args.schema, 'schema');
    if (args.working_directory !== undefined) script.cwd = args.working_directory;
    if (args.clearance !== undefined) script.clearance = args.clearance;
    if (args.root_oids !== undefined) script.root_oids = args.root_oids;
    if (args.image !== undefined) {
      const spec = await this.core.images.require(args.image);
      script.image = args.image;
      script.ispec = JSON.stringify(spec);
      script.idef = budgetUnits(spec.default_budget);
      script.iskills = spec.skills;
      script.pool = spec.pool;
    }
    const reply = await this.core.run('spawn', pid, script, caller);
    const head = spawnHeadSchema.parse(reply.head);
    const row = rowFromFlat(reply.rest[0]);
    await this.core.launch(row);
    return {
      result: {
        pid: head.pid,
        status: statusOf(row),
        image: field(row, 'image'),
        cwd: field(row, 'cwd'),
        state_generation: Number(field(row, 'gen')),
        resource_budget: budgetOf(row),
      },
      roots: head.roots.map((root) => ({ oid: root.oid, rights: rightsList(root.rights) })),
    };
  }

  async spawn(
    caller: Caller,
    args: ParsedToolArgs<'spawn_child_process'>,
  ): Promise<ToolResult<'spawn_child_process'>> {
    return (await this.launchChild(caller, args, 'spawn')).result;
  }

  async fork(
    caller: Caller,
    args: ParsedToolArgs<'fork_child_process'>,
  ): Promise<ToolResult<'fork_child_process'>> {
    const { result, roots } = await this.launchChild(caller, args, args.mode);
    return { ...result, roots };
  }

  /**
   * spawn_children: every entry checked before anything is written (one script on the tree), so
   * either all children are created and enqueued (one `onLaunches`) or none is. A refusal names
   * its entry: `details.index` (0-based) and a message starting `children[i]: `.
   */
  async spawnMany(
    caller: Caller,
    args: ParsedToolArgs<'spawn_children'>,
  ): Promise<ToolResult<'spawn_children'>> {
    const pid = checkCaller(caller);
    const max = this.core.limits.spawnBatchMax;
    if (args.children.length > max) {
      throw new KernelError(
        'invalid_argument',
        `spawn_children takes at most ${max} children in one call (got ${args.children.length})`,
        { reason: 'batch_too_large', limit: max, given: args.children.length },
      );
    }
    const images = new Map<string, Record<string, unknown>>();
    const entries: Record<string, unknown>[] = [];
    for (const [index, entry] of args.children.entries()) {
      try {
        const script: Record<string, unknown> = {
          goal: entry.goal,
          paths: paths(entry.inherited_paths),
          caps: (entry.inherit_capabilities ?? []).map(storedCapability),
          budget: budgetUnits(entry.resource_budget),
        };
        if (entry.input !== undefined) script.input = this.core.json(entry.input, 'input');
        if (entry.schema !== undefined) script.schema = this.core.json(entry.schema, 'schema');
        if (entry.working_directory !== undefined) script.cwd = entry.working_directory;
        if (entry.clearance !== undefined) script.clearance = entry.clearance;
        if (entry.image !== undefined) {
          let image = images.get(entry.image);
          if (!image) {
            const spec = await this.core.images.require(entry.image);
            image = {
              image: entry.image,
              ispec: JSON.stringify(spec),
              idef: budgetUnits(spec.default_budget),
              iskills: spec.skills,
              pool: spec.pool,
            };
            images.set(entry.image, image);
          }
          Object.assign(script, image);
        }
        entries.push(script);
      } catch (error) {
        throw atEntry(index, error);
      }
    }
    const reply = await this.core.run(
      'spawn_many',
      pid,
      { caller: pid, children: entries, object_bytes: this.core.limits.processObjectBytes },
      caller,
    );
    const head = spawnManyHeadSchema.parse(reply.head);
    const rows = reply.rest.map((flat) => rowFromFlat(flat));
    if (rows.length !== head.pids.length) throw new KernelError('internal', 'spawn_many: bad reply');
    await this.core.launchMany(rows);
    return {
      children: rows.map((row) => ({
        pid: field(row, 'pid'),
        status: statusOf(row),
        image: field(row, 'image'),
        cwd: field(row, 'cwd'),
        state_generation: Number(field(row, 'gen')),
        resource_budget: budgetOf(row),
      })),
    };
  }

  private async waitManyOnce(
    caller: Caller,
    children: string[],
    mode: 'any' | 'all',
    block: boolean,
    recheck = false,
  ): Promise<ToolResult<'wait_children'>> {
    const pid = caller.pid;
    const reply = await this.core.run(
      'wait_children',
      pid,
      { caller: pid, children, mode, block, recheck },
      caller,
    );
    const head = waitManyHeadSchema.parse(reply.head);
    return {
      ready: head.ready,
      mode,
      ended_pids: head.ended,
      children: reply.rest.map((flat, i) => {
        const one = head.heads[i];
        return waitResult(
          rowFromFlat(flat),
          one?.ready ?? false,
          one?.result_oid ?? null,
          one?.withheld ?? null,
        );
      }),
    };
  }

  /**
   * wait_children: like `wait` over a set of direct children, ready when any (or, mode `all`,
   * every) one is terminal. Blocking listens to each child's exit topic (the tree's one channel)
   * and re-checks on a wake, as `wait` does; the caller's wait_state records the set.
   */
  async waitMany(
    caller: Caller,
    args: ParsedToolArgs<'wait_children'>,
    options?: CallOptions,
  ): Promise<ToolResult<'wait_children'>> {
    const pid = checkCaller(caller);
    const max = this.core.limits.waitChildrenMax;
    const children = args.child_pids;
    if (children.length > max) {
      throw new KernelError(
        'invalid_argument',
        `wait_children takes at most ${max} children in one call (got ${children.length})`,
        { reason: 'batch_too_large', limit: max, given: children.length },
      );
    }
    const seen = new Set<string>();
    for (const [index, child] of children.entries()) {
      sameTree(pid, child);
      if (seen.has(child)) {
        throw new KernelError('invalid_argument', `child_pids[${index}]: ${child} is named twice`, {
          reason: 'duplicate_pid',
          index,
        });
      }
      seen.add(child);
    }
    if (!args.block) return this.waitManyOnce(caller, children, args.mode, false);
    return this.core.blocking(
      children.map((child) => this.core.keys.exitTopic(child)),
      (recheck) => this.waitManyOnce(caller, children, args.mode, true, recheck),
      (result) => result.ready,
      options,
      args.mode === 'all' ? everyOneEnded(children) : undefined,
    );
  }

  async list(
    caller: Caller,
    args: ParsedToolArgs<'list_child_processes'>,
  ): Promise<ToolResult<'list_child_processes'>> {
    const pid = checkCaller(caller);
    const reply = await this.core.run(
      'list',
      pid,
      { caller: pid, include_terminal: args.include_terminal },
      caller,
    );
    const rows = reply.rest[0] === undefined ? [] : rowsSchema.parse(reply.rest[0]);
    return { children: rows.map((flat) => viewOf(rowFromFlat(flat))) };
  }

  async get(caller: Caller, args: ParsedToolArgs<'get_process'>): Promise<ProcessView> {
    const pid = checkCaller(caller);
    const target = args.pid ?? pid;
    sameTree(pid, target);
    const reply = await this.core.run('get', pid, { caller: pid, pid: target }, caller);
    return viewOf(rowFromFlat(reply.rest[0]));
  }

  private async waitOnce(
    caller: Caller,
    child: string,
    block: boolean,
    recheck = false,
  ): Promise<ToolResult<'wait_child_process'>> {
    const pid = caller.pid;
    const reply = await this.core.run('wait', pid, { caller: pid, child, block, recheck }, caller);
    const head = waitHeadSchema.parse(reply.head);
    const row = rowFromFlat(reply.rest[0]);
    return waitResult(row, head.ready, head.result_oid ?? null, head.withheld ?? null);
  }

  async wait(
    caller: Caller,
    args: ParsedToolArgs<'wait_child_process'>,
    options?: CallOptions,
  ): Promise<ToolResult<'wait_child_process'>> {
    const pid = checkCaller(caller);
    sameTree(pid, args.child_pid);
    if (!args.block) return this.waitOnce(caller, args.child_pid, false);
    return this.core.blocking(
      this.core.keys.exitTopic(args.child_pid),
      (recheck) => this.waitOnce(caller, args.child_pid, true, recheck),
      (result) => result.ready,
      options,
    );
  }

  /** A parent's signal (`caller`) or an operator's (`caller` undefined: may clear a host gate). */
  async signal(
    caller: Caller | undefined,
    args: ParsedToolArgs<'signal_child_process'>,
  ): Promise<ToolResult<'signal_child_process'>> {
    const pid = caller ? checkCaller(caller) : '';
    if (pid) sameTree(pid, args.child_pid);
    const reply = await this.core.run(
      'signal',
      args.child_pid,
      {
        caller: pid,
        child: args.child_pid,
        signal: args.signal,
        ...(args.reason === undefined ? {} : { reason: args.reason }),
      },
      caller,
    );
    const head = signalHeadSchema.parse(reply.head);
    const row = rowFromFlat(reply.rest[0]);
    if (head.launch) await this.core.launch(row);
    return signalResult(row);
  }

  async merge(
    caller: Caller,
    args: ParsedToolArgs<'merge_child_memory'>,
  ): Promise<ToolResult<'merge_child_memory'>> {
    const pid = checkCaller(caller);
    sameTree(pid, args.child_pid);
    const reply = await this.core.run(
      'merge',
      pid,
      { caller: pid, child: args.child_pid, include_child_created: args.include_child_created },
      caller,
    );
    return mergeHeadSchema.parse(reply.head);
  }

  async exit(caller: Caller, args: ParsedToolArgs<'process_exit'>): Promise<ToolResult<'process_exit'>> {
    const pid = checkCaller(caller);
    const script: Record<string, unknown> = { caller: pid, failed: args.failed };
    if (args.payload !== undefined) script.payload = this.core.json(args.payload, 'payload');
    if (args.reason !== undefined) script.reason = args.reason;
    const reply = await this.core.run('exit', pid, script, caller);
    const head = exitHeadSchema.parse(reply.head);
    return { status: statusOf(rowFromFlat(reply.rest[0])), result_oid: head.result_oid || null };
  }
}

/** A refusal found before the script (an image, a payload size) names its batch entry too. */
function atEntry(index: number, error: unknown): unknown {
  if (!(error instanceof KernelError)) return error;
  return new KernelError(error.code, `children[${index}]: ${error.message}`, { ...error.details, index });
}

export function waitResult(
  row: ProcessRow,
  ready: boolean,
  resultOid: string | null,
  withheld: 'data_flow' | null,
): ToolResult<'wait_child_process'> {
  return {
    ready,
    child_pid: field(row, 'pid'),
    status: statusOf(row),
    wait_state: waitStateOf(row),
    outcome: outcomeOf(row),
    result_oid: resultOid,
    state_generation: Number(field(row, 'gen')),
    result_withheld: withheld,
  };
}

export function signalResult(row: ProcessRow): ToolResult<'signal_child_process'> {
  const view = viewOf(row);
  return {
    child_pid: view.pid,
    status: view.status,
    state_generation: view.state_generation,
    pending_signal: view.pending_signal,
  };
}

/**
 * Mode `all` re-checks once every child of the set has ended: the ones a check found ended, and
 * each whose exit topic has published (it carries terminal transitions only). Known ends are only
 * added to: a publish can arrive before the reply of a check that ran before it, and replacing
 * the set with that check's would forget it (the wait would then sit until its window ends).
 */
export function everyOneEnded(children: readonly string[]): WakeGate<ToolResult<'wait_children'>> {
  const ended = new Set<string>();
  return {
    checked: (result) => {
      for (const child of result.ended_pids) ended.add(child);
    },
    admits: (index) => {
      const child = children[index];
      if (child !== undefined) ended.add(child);
      return ended.size >= children.length;
    },
  };
}
