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
} from './core.js';
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
