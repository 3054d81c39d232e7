import {
  type BudgetDimensionView,
  type BudgetView,
  type CapabilityGrant,
  type InheritedPath,
  imageSpecSchema,
  inheritedPathSchema,
  jsonValueSchema,
  type Outcome,
  outcomeSchema,
  type ProcessStatus,
  type ProcessView,
  pendingSignalSchema,
  processStatusSchema,
  rootOf,
  type WaitState,
  waitStateSchema,
} from '@libos/protocol';
import { z } from 'zod';
import { luaList, luaRecord, parseJson } from './lua-json.js';

/**
 * A process row as Redis holds it (every field a string). Fields at their default ('' / '0' /
 * '[]' / '{}') are not stored (see DEFAULTS in lua/lib.lua): `field` reads them as ''.
 */
export type ProcessRow = Readonly<Record<string, string>>;

const flatSchema = z.array(z.string());

export function rowFromFlat(flat: unknown): ProcessRow {
  const list = flatSchema.parse(flat);
  const row: Record<string, string> = {};
  for (let i = 0; i + 1 < list.length; i += 2) row[list[i] as string] = list[i + 1] as string;
  return row;
}

export function field(row: ProcessRow, name: string): string {
  return row[name] ?? '';
}

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

const MICRO = 1_000_000;

/** Internal budget units: cost is kept in micro-dollars so Lua sums integers. */
export function toUnits(dimension: string, value: number): number {
  return dimension === 'cost_usd' ? Math.round(value * MICRO) : Math.round(value);
}
function fromUnits(dimension: string, value: number): number {
  return dimension === 'cost_usd' ? value / MICRO : value;
}

function dimension(row: ProcessRow, name: string): BudgetDimensionView {
  const limit = Number(field(row, `bl:${name}`) || '-1');
  const reserved = Number(field(row, `br:${name}`) || '0');
  const used = Number(field(row, `bu:${name}`) || '0');
  if (limit < 0)
    return { limit: null, reserved: fromUnits(name, reserved), used: fromUnits(name, used), remaining: null };
  return {
    limit: fromUnits(name, limit),
    reserved: fromUnits(name, reserved),
    used: fromUnits(name, used),
    remaining: fromUnits(name, Math.max(0, limit - used - reserved)),
  };
}

export function budgetOf(row: ProcessRow): BudgetView {
  return {
    tokens: dimension(row, 'tokens'),
    cost_usd: dimension(row, 'cost_usd'),
    steps: dimension(row, 'steps'),
    wall_ms: dimension(row, 'wall_ms'),
    children: dimension(row, 'children'),
    object_bytes: dimension(row, 'object_bytes'),
  };
}

const storedWaitSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('child'), child_pid: z.string(), since: z.number() }),
  z.object({
    type: z.literal('children'),
    child_pids: luaList(z.string()),
    mode: z.enum(['any', 'all']),
    since: z.number(),
  }),
  z.object({
    type: z.literal('message'),
    filter: z.object({
      kind: z.enum(['normal', 'interrupt']).optional(),
      sender: z.string().optional(),
      channel: z.string().optional(),
      correlation_id: z.string().optional(),
      reply_to: z.string().optional(),
      message_ids: luaList(z.string()).optional(),
      include_acked: z.boolean(),
    }),
    since: z.number(),
  }),
]);

export function waitStateOf(row: ProcessRow): WaitState | null {
  const raw = field(row, 'ws');
  if (!raw) return null;
  const stored = storedWaitSchema.parse(parseJson(raw));
  return waitStateSchema.parse({ ...stored, since: iso(stored.since) });
}

export function outcomeOf(row: ProcessRow): Outcome | null {
  const raw = field(row, 'outcome');
  return raw ? outcomeSchema.parse(parseJson(raw)) : null;
}

const storedGrantSchema = z.object({
  resource: z.string(),
  rights: luaList(z.string()),
  constraints: luaRecord(jsonValueSchema).optional(),
  delegable: z.boolean().optional(),
  expires_at: z.number().optional(),
});
export type StoredGrant = z.input<typeof storedGrantSchema>;

// Schemas are built once: building one per call (and compiling its parser) costs more than parsing.
const storedGrantsSchema = luaList(storedGrantSchema);
export function grantsOf(row: ProcessRow): CapabilityGrant[] {
  return storedGrantsSchema.parse(parseJson(field(row, 'caps') || '[]')).map((grant) => ({
    resource: grant.resource,
    rights: grant.rights,
    constraints: grant.constraints ?? {},
    delegable: grant.delegable ?? false,
    expires_at: grant.expires_at === undefined ? null : iso(grant.expires_at),
  }));
}

const stringList = luaList(z.string());
export function listOf(row: ProcessRow, name: string): string[] {
  return stringList.parse(parseJson(field(row, name) || '[]'));
}

const inheritedPathsSchema = luaList(inheritedPathSchema);
export function pathsOf(row: ProcessRow): InheritedPath[] {
  return inheritedPathsSchema.parse(parseJson(field(row, 'paths') || '[]'));
}

export function imageSpecOf(row: ProcessRow) {
  const raw = field(row, 'ispec');
  return raw ? imageSpecSchema.parse(parseJson(raw)) : null;
}

export function statusOf(row: ProcessRow): ProcessStatus {
  return processStatusSchema.parse(field(row, 'status'));
}

const modeSchema = z.enum(['root', 'spawn', 'worker', 'restricted', 'copy', 'speculative']);

export function viewOf(row: ProcessRow): ProcessView {
  const parent = field(row, 'parent');
  const image = field(row, 'image');
  const result = field(row, 'result');
  const psig = field(row, 'psig');
  const preason = field(row, 'preason');
  const spec = imageSpecOf(row);
  return {
    pid: field(row, 'pid'),
    parent_pid: parent || null,
    root_pid: rootOf(field(row, 'pid')),
    namespace: field(row, 'pid'),
    goal: field(row, 'goal'),
    input: parseInput(row),
    image: image || null,
    cwd: field(row, 'cwd'),
    status: statusOf(row),
    wait_state: waitStateOf(row),
    outcome: outcomeOf(row),
    result_oid: result || null,
    state_generation: Number(field(row, 'gen')),
    attempt: Number(field(row, 'attempt')),
    resource_budget: budgetOf(row),
    created_at: iso(Number(field(row, 'ct'))),
    updated_at: iso(Number(field(row, 'ut') || field(row, 'ct'))),
    started_at: startedAt(row),
    ended_at: field(row, 'et') ? iso(Number(field(row, 'et'))) : null,
    driver: field(row, 'driver') === 'caller' ? 'caller' : 'worker',
    mode: modeSchema.parse(field(row, 'mode')),
    pending_signal: psig ? pendingSignalSchema.parse(parseJson(psig)) : null,
    pause_reason: preason || null,
    resume_gate: field(row, 'gate') === 'host' ? 'host' : null,
    capabilities: grantsOf(row),
    required_capabilities: spec?.required_capabilities ?? [],
    clearance: listOf(row, 'clr'),
    labels: listOf(row, 'taint'),
    skill_snapshot: listOf(row, 'skills'),
    roots: listOf(row, 'roots'),
    inherited_paths: pathsOf(row),
    merged: field(row, 'merged') === '1',
  };
}

const claimedSchema = z.array(z.object({ n: z.number(), c: z.number() }).loose());

/** The claim of the current attempt (the row's attempt history); caller-driven: its creation. */
function startedAt(row: ProcessRow): string | null {
  if (field(row, 'driver') === 'caller') return iso(Number(field(row, 'ct')));
  const raw = field(row, 'att');
  if (!raw) return null;
  const last = claimedSchema.parse(parseJson(raw)).at(-1);
  return last && last.n === Number(field(row, 'attempt')) ? iso(last.c) : null;
}

const storedSchemaSchema = z.record(z.string(), jsonValueSchema);

/** The JSON Schema a launched process's report must satisfy, when its launch gave one. */
export function parseSchema(row: ProcessRow) {
  const schema = field(row, 'schema');
  return schema ? storedSchemaSchema.parse(parseJson(schema)) : null;
}

export function parseInput(row: ProcessRow) {
  const input = field(row, 'input');
  return input ? jsonValueSchema.parse(parseJson(input)) : null;
}
