import {
  jsonValueSchema,
  type MessageView,
  type Notice,
  noticeFor,
  type ParsedToolArgs,
  type PendingNotices,
  type ToolResult,
} from '@libos/protocol';
import { z } from 'zod';
import { type Caller, type CallOptions, checkCaller, type KernelCore, sameTree } from './core.js';
import { KernelError } from './errors.js';
import { luaList } from './lua-json.js';
import { iso } from './rows.js';

const sendHeadSchema = z.object({ message_id: z.string(), created_at: z.number() });
const readHeadSchema = z.object({
  omitted: z.number(),
  ready: z.boolean(),
  acked: luaList(z.string()).optional(),
});
const headerSchema = z.object({
  s: z.string(),
  r: z.string(),
  k: z.enum(['normal', 'interrupt']),
  c: z.string().optional(),
  q: z.string().optional(),
  t: z.string().optional(),
  l: luaList(z.string()).optional(),
  ts: z.number(),
  a: z.number(),
  at: z.number().optional(),
});
const contentSchema = z.object({ body: z.string().nullable(), payload: jsonValueSchema.nullable() });
const stringsSchema = z.array(z.string());
const noticeHeadSchema = z.object({ ids: luaList(z.string()) });
const peekHeadSchema = z.object({ interrupt: luaList(z.string()), normal: luaList(z.string()) });

type ReadArgs = ParsedToolArgs<'read_process_messages'>;

const ADVANCES =
  'Repeat the same filters to continue: the returned unread messages were acknowledged, so they are excluded next time.';
const REPLAYS =
  'Repeating the same filters returns the same first page again (ack=false or include_acked=true): narrow the filters or name exact message_ids; do not claim the mailbox is complete from such retries.';

function messageOf(headerText: string, contentText: string, id: string): MessageView {
  const h = headerSchema.parse(JSON.parse(headerText));
  const content = contentSchema.parse(JSON.parse(contentText));
  return {
    message_id: id,
    sender: h.s,
    recipient: h.r,
    kind: h.k,
    channel: h.c ?? null,
    correlation_id: h.q ?? null,
    reply_to: h.t ?? null,
    body: content.body,
    payload: content.payload,
    labels: h.l ?? [],
    created_at: iso(h.ts),
    acked: h.a === 1,
    acked_at: h.at === undefined ? null : iso(h.at),
  };
}

const seqSchema = z.object({ n: z.number() });

/** The mailbox tools and the notices the coordinator attaches to tool responses. */
export class MessageTools {
  constructor(private readonly core: KernelCore) {}

  async send(
    caller: Caller,
    args: ParsedToolArgs<'send_process_message'>,
  ): Promise<ToolResult<'send_process_message'>> {
    const pid = checkCaller(caller);
    if (args.to !== 'self' && args.to !== 'parent') sameTree(pid, args.to);
    const script: Record<string, unknown> = {
      caller: pid,
      to: args.to,
      kind: args.kind,
      content: this.core.json({ body: args.body ?? null, payload: args.payload ?? null }, 'message'),
      max: this.core.limits.mailboxMax,
      max_bytes: this.core.limits.mailboxMaxBytes,
      tree_max_bytes: this.core.limits.treeMailboxBytes,
    };
    if (args.channel !== undefined) script.channel = args.channel;
    if (args.correlation_id !== undefined) script.correlation_id = args.correlation_id;
    if (args.reply_to !== undefined) script.reply_to = args.reply_to;
    if (args.labels !== undefined) script.labels = args.labels;
    const reply = await this.core.run('send', pid, script, caller);
    const head = sendHeadSchema.parse(reply.head);
    return { message_id: head.message_id, created_at: iso(head.created_at) };
  }

  private async readOnce(
    caller: Caller,
    args: ReadArgs,
    receive: boolean,
    block: boolean,
    recheck = false,
  ): Promise<ToolResult<'receive_process_messages'>> {
    const filter: Record<string, unknown> = {};
    for (const key of ['kind', 'sender', 'channel', 'correlation_id', 'reply_to', 'message_ids'] as const) {
      if (args[key] !== undefined) filter[key] = args[key];
    }
    const pid = caller.pid;
    const reply = await this.core.run(
      'read',
      pid,
      {
        caller: pid,
        filter,
        include_acked: args.include_acked,
        ack: args.ack,
        limit: args.limit,
        receive,
        block,
        recheck,
        retention: this.core.limits.ackedRetention,
      },
      caller,
    );
    const head = readHeadSchema.parse(reply.head);
    const messages: MessageView[] = [];
    const strings = stringsSchema.parse(reply.rest);
    for (let i = 0; i + 1 < strings.length; i += 2) {
      const header = strings[i] as string;
      const id = idOf(header, pid);
      messages.push(messageOf(header, strings[i + 1] as string, id));
    }
    const hasMore = head.omitted > 0;
    const advances = args.ack && !args.include_acked;
    return {
      messages,
      acked_message_ids: head.acked ?? [],
      has_more: hasMore,
      omitted_count: head.omitted,
      continuation: hasMore ? { reuse_filters: true, advances, note: advances ? ADVANCES : REPLAYS } : null,
      ready: head.ready,
    };
  }

  async read(caller: Caller, args: ReadArgs): Promise<ToolResult<'read_process_messages'>> {
    checkCaller(caller);
    const { ready: _ready, ...result } = await this.readOnce(caller, args, false, false);
    return result;
  }

  async receive(
    caller: Caller,
    args: ParsedToolArgs<'receive_process_messages'>,
    options?: CallOptions,
  ): Promise<ToolResult<'receive_process_messages'>> {
    const pid = checkCaller(caller);
    if (!args.block) return this.readOnce(caller, args, true, false);
    if (args.limit === 0 || (args.message_ids !== undefined && args.message_ids.length === 0)) {
      throw new KernelError(
        'invalid_argument',
        'limit=0 or empty message_ids cannot form a blocking receive',
        {
          reason: 'blocking_receive',
        },
      );
    }
    return this.core.blocking(
      this.core.keys.mailTopic(pid),
      (recheck) => this.readOnce(caller, args, true, true, recheck),
      (result) => result.ready,
      options,
    );
  }

  /** Pending notices of a process, nothing consumed. */
  async pending(pid: string): Promise<PendingNotices> {
    const reply = await this.core.run('notices', pid, { pid, phase: 'peek' });
    return peekHeadSchema.parse(reply.head);
  }

  /**
   * Consume the notices due now: `before` a non-message tool call (interrupts), `after` a tool
   * call (normal messages). Each notice is delivered once; the messages stay until acknowledged.
   */
  async take(pid: string, phase: 'before' | 'after'): Promise<Notice | undefined> {
    const reply = await this.core.run('notices', pid, { pid, phase });
    const ids = noticeHeadSchema.parse(reply.head).ids;
    return noticeFor(phase === 'before' ? 'interrupt' : 'normal', ids);
  }

  /**
   * The notices due to a caller whose tool call was refused, consumed in one step: interrupts
   * (when the call was not a message tool) and normal ones, so a refusal delays none of them.
   */
  async takeOnRefusal(pid: string, interrupts: boolean): Promise<Notice[]> {
    const reply = await this.core.run('notices', pid, { pid, phase: 'refused', interrupts });
    const due = peekHeadSchema.parse(reply.head);
    return [noticeFor('interrupt', due.interrupt), noticeFor('normal', due.normal)].filter(
      (notice): notice is Notice => notice !== undefined,
    );
  }
}

/** A stored message (header and content strings) of `pid`'s mailbox as the wire shows it. */
export function storedMessage(headerText: string, contentText: string, pid: string): MessageView {
  return messageOf(headerText, contentText, idOf(headerText, pid));
}

/** Message ids are `<root>/m<n>`; the header carries n. */
function idOf(headerText: string, pid: string): string {
  const { n } = seqSchema.parse(JSON.parse(headerText));
  const dot = pid.indexOf('.');
  return `${dot >= 0 ? pid.slice(0, dot) : pid}/m${n}`;
}
