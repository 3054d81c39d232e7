import {
  type Notice,
  noticeSchema,
  TOOLS,
  type ToolArgs,
  type ToolName,
  type ToolResult,
} from '@libos/protocol';
import { z } from 'zod';
import { LibosError } from './errors.js';
import { Http, type HttpOptions, isRetryable, type RequestOptions, sleep } from './http.js';

export interface ProcessClientOptions extends HttpOptions {
  /** Called with the notices the coordinator attaches to a tool response (message ids only). */
  onNotices?: (notices: Notice[]) => void;
}

const noticesSchema = z.array(noticeSchema);

/**
 * Tools asked again transparently when the coordinator could not be reached or answered 503 (see
 * `RequestOptions.idempotent`): reads, whose repetition changes nothing (a repeated `read_object`
 * adds the same taint again). Not spawn, fork, send, exit or a consuming read: the API has no
 * idempotency key, so a spawn whose answer was lost may have created the child; find it with
 * `list_child_processes` (by goal) before spawning again.
 */
const IDEMPOTENT_TOOLS: ReadonlySet<ToolName> = new Set([
  'get_process',
  'list_child_processes',
  'read_object',
]);

/** How long to wait before asking again after the coordinator could not be reached. */
const RETRY_DELAYS_MS = [50, 100, 250, 500, 1000, 2000];

/**
 * The tools of one process, called with its token. Blocking `wait` and `receive` hide the
 * coordinator's long-poll windows: they ask again until the answer is ready.
 */
export class ProcessClient {
  private readonly http: Http;
  /** Notices from the last tool response. */
  lastNotices: Notice[] = [];

  constructor(private readonly options: ProcessClientOptions) {
    this.http = new Http(options);
  }

  /** Any tool by name; the answer is validated against the tool's result schema. */
  async call<N extends ToolName>(
    tool: N,
    args: ToolArgs<N>,
    options: RequestOptions = {},
  ): Promise<ToolResult<N>> {
    try {
      return this.deliver(await this.request(tool, args, options));
    } catch (error) {
      // A refusal carries the notices due too: they are delivered like an answer's.
      if (error instanceof LibosError) this.deliver({ data: undefined, notices: error.notices });
      throw error;
    }
  }

  /**
   * A tool call with arguments not checked here (an MCP client's, say): the coordinator
   * validates them. Blocking waits and receives behave as `wait` and `receive`. Answers the
   * result with the notices of this call alone (of every round, for a blocking one).
   */
  forward(
    tool: ToolName,
    args: Record<string, unknown>,
    options: RequestOptions = {},
  ): Promise<Answer<unknown>> {
    if (tool === 'wait_child_process') return this.blockingWait(args, options);
    if (tool === 'wait_children') return this.blockingWaitChildren(args, options);
    if (tool === 'receive_process_messages') return this.blockingReceive(args, options);
    return this.request(tool, args, options);
  }

  private async request<N extends ToolName>(
    tool: N,
    args: unknown,
    options: RequestOptions,
  ): Promise<Answer<ToolResult<N>>> {
    // TypeScript cannot correlate TOOLS[N] with ToolResult<N>; they are the same by construction.
    const schema = TOOLS[tool].result as unknown as z.ZodType<ToolResult<N>>;
    const idempotent = options.idempotent ?? IDEMPOTENT_TOOLS.has(tool);
    const { data, raw } = await this.http.request('POST', `/v1/tools/${tool}`, schema, args, {
      ...options,
      idempotent,
    });
    const notices = noticesSchema.safeParse(raw.notices);
    return { data, notices: notices.success ? notices.data : [] };
  }

  /** Hands an answer's notices to `lastNotices` and `onNotices`, and returns its data. */
  private deliver<T>(answer: Answer<T>): T {
    this.lastNotices = answer.notices;
    if (answer.notices.length > 0) this.options.onNotices?.(answer.notices);
    return answer.data;
  }

  spawn(args: ToolArgs<'spawn_child_process'>, options?: RequestOptions) {
    return this.call('spawn_child_process', args, options);
  }
  /**
   * Spawn a batch of children in one call (one script, one enqueue): all are created or none,
   * and a refusal names the entry (`error.details.index`).
   */
  spawnChildren(args: ToolArgs<'spawn_children'>, options?: RequestOptions) {
    return this.call('spawn_children', args, options);
  }
  fork(args: ToolArgs<'fork_child_process'>, options?: RequestOptions) {
    return this.call('fork_child_process', args, options);
  }
  listChildren(args: ToolArgs<'list_child_processes'> = {}, options?: RequestOptions) {
    return this.call('list_child_processes', args, options);
  }
  signal(args: ToolArgs<'signal_child_process'>, options?: RequestOptions) {
    return this.call('signal_child_process', args, options);
  }
  merge(args: ToolArgs<'merge_child_memory'>, options?: RequestOptions) {
    return this.call('merge_child_memory', args, options);
  }
  send(args: ToolArgs<'send_process_message'>, options?: RequestOptions) {
    return this.call('send_process_message', args, options);
  }
  read(args: ToolArgs<'read_process_messages'> = {}, options?: RequestOptions) {
    return this.call('read_process_messages', args, options);
  }
  exit(args: ToolArgs<'process_exit'> = {}, options?: RequestOptions) {
    return this.call('process_exit', args, options);
  }
  createObject(args: ToolArgs<'create_object'>, options?: RequestOptions) {
    return this.call('create_object', args, options);
  }
  readObject(args: ToolArgs<'read_object'>, options?: RequestOptions) {
    return this.call('read_object', args, options);
  }
  writeObject(args: ToolArgs<'write_object'>, options?: RequestOptions) {
    return this.call('write_object', args, options);
  }
  getProcess(args: ToolArgs<'get_process'> = {}, options?: RequestOptions) {
    return this.call('get_process', args, options);
  }

  /**
   * Wait for a direct child. Blocking (the default) returns only when the child is terminal:
   * a long-poll window that ends unready, a broken connection or a restarting coordinator is
   * asked again (a wait is an observation, so asking again is safe).
   */
  async wait(args: ToolArgs<'wait_child_process'>, options: RequestOptions = {}) {
    return this.deliver(await this.blockingWait(args, options));
  }

  /**
   * Wait for a set of direct children: blocking (the default) returns once any of them
   * (`mode: 'any'`, the default; `ended_pids` names which) or every one (`mode: 'all'`) is
   * terminal, asking again across long-poll windows and restarts as `wait` does.
   */
  async waitChildren(args: ToolArgs<'wait_children'>, options: RequestOptions = {}) {
    return this.deliver(await this.blockingWaitChildren(args, options));
  }

  /**
   * Receive messages. Blocking (the default) returns when a matching unread message arrived.
   * Only an unready long-poll answer is asked again: a broken connection is reported, because
   * a receive that acknowledges may have taken effect before its answer was lost.
   */
  async receive(args: ToolArgs<'receive_process_messages'> = {}, options: RequestOptions = {}) {
    return this.deliver(await this.blockingReceive(args, options));
  }

  private blockingWait(args: { block?: boolean }, options: RequestOptions) {
    return this.askUntilReady('wait_child_process', args, options);
  }

  private blockingWaitChildren(args: { block?: boolean }, options: RequestOptions) {
    return this.askUntilReady('wait_children', args, options);
  }

  /** A wait is an observation: an unready window or a retryable failure is asked again. */
  private async askUntilReady<N extends 'wait_child_process' | 'wait_children'>(
    tool: N,
    args: { block?: boolean },
    options: RequestOptions,
  ): Promise<Answer<ToolResult<N>>> {
    if (args.block === false) return this.request(tool, args, options);
    const notices: Notice[] = [];
    for (let failures = 0; ; ) {
      try {
        const answer = await this.request(tool, { ...args, block: true }, options);
        notices.push(...answer.notices);
        if ((answer.data as { ready: boolean }).ready) return { data: answer.data, notices };
        failures = 0;
      } catch (error) {
        if (!isRetryable(error)) throw error;
        await sleep(RETRY_DELAYS_MS[Math.min(failures++, RETRY_DELAYS_MS.length - 1)]!, options.signal);
      }
    }
  }

  private async blockingReceive(args: { block?: boolean }, options: RequestOptions) {
    const notices: Notice[] = [];
    for (;;) {
      const answer = await this.request('receive_process_messages', args, options);
      notices.push(...answer.notices);
      if (answer.data.ready || args.block === false) return { data: answer.data, notices };
    }
  }
}

/** A tool's result and the notices that rode on its answer. */
export interface Answer<T> {
  data: T;
  notices: Notice[];
}
