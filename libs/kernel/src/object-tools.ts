import { jsonValueSchema, type ParsedToolArgs, type ToolResult } from '@libos/protocol';
import { z } from 'zod';
import { type Caller, checkCaller, type KernelCore, sameTree } from './core.js';
import { luaList } from './lua-json.js';
import { rightsList } from './process-tools.js';

const stringSchema = z.string();
const createHeadSchema = z.object({ oid: z.string(), version: z.number(), labels: luaList(z.string()) });
const readHeadSchema = z.object({
  oid: z.string(),
  owner: z.string(),
  rights: z.string(),
  labels: luaList(z.string()),
  version: z.number(),
  kind: z.enum(['GOAL', 'PROCESS', 'PROCESS_RESULT']),
});
const writeHeadSchema = z.object({ oid: z.string(), version: z.number() });

/** Objects: payload, owner, labels, version; per-process handles carry the rights. */
export class ObjectTools {
  constructor(private readonly core: KernelCore) {}

  async create(caller: Caller, args: ParsedToolArgs<'create_object'>): Promise<ToolResult<'create_object'>> {
    const pid = checkCaller(caller);
    const script: Record<string, unknown> = {
      caller: pid,
      payload: this.core.json(args.payload, 'payload'),
      root: args.root,
    };
    if (args.labels !== undefined) script.labels = args.labels;
    const reply = await this.core.run('obj_create', pid, script, caller);
    return createHeadSchema.parse(reply.head);
  }

  async read(caller: Caller, args: ParsedToolArgs<'read_object'>): Promise<ToolResult<'read_object'>> {
    const pid = checkCaller(caller);
    sameTree(pid, args.oid);
    const reply = await this.core.run('obj_read', pid, { caller: pid, oid: args.oid }, caller);
    const head = readHeadSchema.parse(reply.head);
    const payload = jsonValueSchema.parse(JSON.parse(stringSchema.parse(reply.rest[0])));
    return { ...head, rights: rightsList(head.rights), payload };
  }

  async write(caller: Caller, args: ParsedToolArgs<'write_object'>): Promise<ToolResult<'write_object'>> {
    const pid = checkCaller(caller);
    sameTree(pid, args.oid);
    const script: Record<string, unknown> = {
      caller: pid,
      oid: args.oid,
      payload: this.core.json(args.payload, 'payload'),
    };
    if (args.if_version !== undefined) script.if_version = args.if_version;
    const reply = await this.core.run('obj_write', pid, script, caller);
    return writeHeadSchema.parse(reply.head);
  }
}
