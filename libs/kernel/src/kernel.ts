import {
  type Notice,
  type ParsedToolArgs,
  type PendingNotices,
  pidSchema,
  TOOLS,
  type ToolArgs,
  type ToolName,
  type ToolResult,
} from '@libos/protocol';
import { AdminOps } from './admin.js';
import { ChildLogs } from './child-logs.js';
import {
  type Caller,
  type CallerProof,
  type CallOptions,
  KernelCore,
  type KernelLimits,
  type KernelOptions,
} from './core.js';
import { KernelError, parseOrThrow } from './errors.js';
import { MessageTools } from './message-tools.js';
import { ObjectTools } from './object-tools.js';
import { ProcessTools } from './process-tools.js';
import { ReaperShards } from './reaper-shards.js';
import type { Retention } from './retention.js';
import { hashSecret, parseToken } from './tokens.js';
import type { WakeHub } from './wake-hub.js';
import { WorkerOps } from './worker-ops.js';

/** A caller that presented its token; every script it runs checks the token again. */
export interface AuthenticatedCaller extends Caller {
  readonly proof: CallerProof;
}

/** Every tool as a method: `(caller, args, options?) => result`. Arguments are validated here. */
export type KernelTools = {
  [N in ToolName]: (caller: Caller, args: ToolArgs<N>, options?: CallOptions) => Promise<ToolResult<N>>;
};

type Impl = {
  [N in ToolName]: (caller: Caller, args: ParsedToolArgs<N>, options?: CallOptions) => Promise<ToolResult<N>>;
};
type AnyImpl = (caller: Caller, args: unknown, options?: CallOptions) => Promise<unknown>;

/**
 * The process kernel on Redis. Its API is the tools (each call names its caller), the admin
 * operations and the worker transitions; every state change is one Lua script on the caller's
 * tree.
 */
export class Kernel {
  readonly tools: KernelTools;
  readonly admin: AdminOps;
  readonly worker: WorkerOps;
  /** Children's output per attempt: the worker appends, operators read and follow. */
  readonly logs: ChildLogs;
  private readonly core: KernelCore;
  private readonly messages: MessageTools;
  private readonly impl: Impl;

  constructor(options: KernelOptions) {
    this.core = new KernelCore(options.redis, options);
    const processes = new ProcessTools(this.core);
    const objects = new ObjectTools(this.core);
    this.messages = new MessageTools(this.core);
    this.admin = new AdminOps(this.core, processes);
    this.worker = new WorkerOps(this.core);
    this.logs = new ChildLogs(this.core);
    const messages = this.messages;
    this.impl = {
      spawn_child_process: (caller, args) => processes.spawn(caller, args),
      fork_child_process: (caller, args) => processes.fork(caller, args),
      spawn_children: (caller, args) => processes.spawnMany(caller, args),
      wait_children: (caller, args, options) => processes.waitMany(caller, args, options),
      list_child_processes: (caller, args) => processes.list(caller, args),
      wait_child_process: (caller, args, options) => processes.wait(caller, args, options),
      signal_child_process: (caller, args) => processes.signal(caller, args),
      merge_child_memory: (caller, args) => processes.merge(caller, args),
      send_process_message: (caller, args) => messages.send(caller, args),
      read_process_messages: (caller, args) => messages.read(caller, args),
      receive_process_messages: (caller, args, options) => messages.receive(caller, args, options),
      process_exit: (caller, args) => processes.exit(caller, args),
      create_object: (caller, args) => objects.create(caller, args),
      read_object: (caller, args) => objects.read(caller, args),
      write_object: (caller, args) => objects.write(caller, args),
      get_process: (caller, args) => processes.get(caller, args),
    };
    const tools: Partial<Record<ToolName, AnyImpl>> = {};
    for (const name of Object.keys(TOOLS) as ToolName[]) {
      tools[name] = (caller, args, callOptions) => this.callTool(name, caller, args, callOptions);
    }
    this.tools = tools as KernelTools;
  }

  get limits(): Readonly<KernelLimits> {
    return this.core.limits;
  }

  get keys() {
    return this.core.keys;
  }

  /** Retention: `sweep()` deletes what is due now, `deleteTree(pid)` an operator's delete. */
  get retention(): Retention {
    return this.core.retention;
  }

  /** The shared subscriber (one connection) that blocking waits and worker control use. */
  get wakeHub(): WakeHub {
    return this.core.hub;
  }

  /** Validate `args` against the tool's schema (defaults applied) and run it for `caller`. */
  async callTool<N extends ToolName>(
    name: N,
    caller: Caller,
    args: unknown,
    options?: CallOptions,
  ): Promise<ToolResult<N>> {
    const tool = TOOLS[name];
    if (!tool) throw new KernelError('not_found', `no tool ${String(name)}`);
    const parsed = parseOrThrow(tool.args, args ?? {}, name) as ParsedToolArgs<N>;
    return this.runParsedTool(name, caller, parsed, options);
  }

  /**
   * Run a tool whose arguments were already parsed by `TOOLS[name].args` (the coordinator's
   * routes validate every body with that schema): the same as `callTool` without parsing twice.
   */
  async runParsedTool<N extends ToolName>(
    name: N,
    caller: Caller,
    args: ParsedToolArgs<N>,
    options?: CallOptions,
  ): Promise<ToolResult<N>> {
    const run = this.impl[name] as AnyImpl;
    return (await run(caller, args, options)) as ToolResult<N>;
  }

  /**
   * A process token -> its caller, checked against Redis now by the same check every script makes
   * of a caller with a proof (one small script). The row keeps only sha256 of the secret;
   * terminal processes have none (a token dies at the terminal transition).
   */
  async authenticate(token: string): Promise<AuthenticatedCaller> {
    const caller = this.callerOf(token);
    await this.core.run('auth', caller.pid, { caller: caller.pid }, caller);
    return caller;
  }

  /**
   * A process token -> its caller without asking Redis (for a token `authenticate` accepted
   * before): each script the caller runs compares the token with the row in the same step, so
   * a token that died since is refused there (`unauthenticated`), and nothing is changed.
   */
  callerOf(token: string): AuthenticatedCaller {
    const parsed = parseToken(token);
    if (!parsed) throw new KernelError('unauthenticated', 'not a process token', { reason: 'invalid_token' });
    return {
      pid: parsed.pid,
      proof: { tokenHash: hashSecret(parsed.secret), noticesDue: { interrupt: false, normal: false } },
    };
  }

  /** Notices waiting for `pid`, nothing consumed. */
  pendingNotices(pid: string): Promise<PendingNotices> {
    parseOrThrow(pidSchema, pid, 'pid');
    return this.messages.pending(pid);
  }

  /** Consume the notice due `before` a non-message tool call (interrupts) or `after` any call. */
  takeNotices(pid: string, phase: 'before' | 'after'): Promise<Notice | undefined> {
    parseOrThrow(pidSchema, pid, 'pid');
    return this.messages.take(pid, phase);
  }

  /**
   * Consume the notices due to a caller whose tool call was refused (one script): interrupts too
   * when `interrupts` (the refused call was not a message tool), normal ones always.
   */
  takeNoticesOnRefusal(pid: string, interrupts: boolean): Promise<Notice[]> {
    parseOrThrow(pidSchema, pid, 'pid');
    return this.messages.takeOnRefusal(pid, interrupts);
  }

  /**
   * The index shards this coordinator's reaper holds, shared with the other coordinators' (see
   * `ReaperShards`): each claim lasts `holdMs` unless renewed.
   */
  reaperShards(holdMs: number): ReaperShards {
    return new ReaperShards(this.core, holdMs);
  }

  /** Wait until the status index has caught up with every transition made so far. */
  flushIndex(): Promise<void> {
    return this.core.index.drain();
  }

  /** Stop the wake hub (its own connection). The caller's ioredis client stays open. */
  close(): Promise<void> {
    return this.core.close();
  }
}
