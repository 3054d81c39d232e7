/**
 * The console's whole data layer: calls to the coordinator's documented admin API (the same
 * routes a script uses), authenticated by the session cookie the login set. State changes carry
 * the CSRF header the coordinator asks of cookie callers.
 */

export const STATUSES = [
  'runnable',
  'running',
  'waiting_event',
  'paused',
  'exited',
  'failed',
  'killed',
] as const;
export type Status = (typeof STATUSES)[number];
export const DIMENSIONS = ['tokens', 'cost_usd', 'steps', 'wall_ms', 'children', 'object_bytes'] as const;
export type Dimension = (typeof DIMENSIONS)[number];

export interface BudgetDimension {
  limit: number | null;
  reserved: number;
  used: number;
  remaining: number | null;
}
/** A coordinator older than a dimension leaves it out. */
export type Budget = Partial<Record<Dimension, BudgetDimension>>;

export interface Outcome {
  type: string;
  reason?: string;
  usage?: Record<string, unknown>;
  unaccounted?: unknown;
  [field: string]: unknown;
}

export interface Capability {
  resource: string;
  rights: string[];
  constraints: Record<string, unknown>;
  delegable: boolean;
  expires_at: string | null;
}

export interface ProcessView {
  pid: string;
  parent_pid: string | null;
  root_pid: string;
  goal: string;
  image: string | null;
  cwd: string;
  status: Status;
  wait_state: unknown;
  outcome: Outcome | null;
  result_oid: string | null;
  attempt: number;
  resource_budget: Budget;
  created_at: string;
  updated_at: string;
  started_at?: string | null;
  ended_at?: string | null;
  driver: 'worker' | 'caller';
  mode: string;
  pending_signal: { signal: string; reason?: string | null } | null;
  pause_reason: string | null;
  resume_gate: 'host' | null;
  capabilities: Capability[];
  labels: string[];
}

export interface TreeNode {
  pid: string;
  parent_pid: string | null;
  depth: number;
  status: Status;
  image: string | null;
  goal: string;
  outcome_type: string | null;
  outcome_reason: string | null;
  attempt: number;
  resource_budget: Budget;
  created_at: string;
  ended_at: string | null;
  updated_at: string;
  child_count: number;
  /** Set by the page from the event stream (the generation of the status shown). */
  gen?: number;
}

export interface TreeCounts {
  root: string;
  descendants: { total: number; by_status: Partial<Record<Status, number>> } | null;
  counted: boolean;
}

export interface AttemptView {
  attempt: number;
  worker: string;
  claimed_at: string;
  ended_at: string | null;
  ended_as: string | null;
  reason: string | null;
}

export interface Describe {
  process: ProcessView;
  attempts: AttemptView[];
  children: { total: number; by_status: Record<string, number> };
}

export interface MessageView {
  message_id: string;
  sender: string;
  recipient: string;
  kind: string;
  channel: string | null;
  correlation_id: string | null;
  reply_to: string | null;
  body: string | null;
  payload: unknown;
  labels: string[];
  created_at: string;
  acked: boolean;
  acked_at: string | null;
}

export interface ObjectEntry {
  oid: string;
  kind: string | null;
  owner: string | null;
  owned: boolean;
  handle: 'r' | 'rw' | null;
  labels: string[];
  version: number | null;
  size_bytes: number;
}

export interface LogLine {
  attempt: number;
  stream: 'stdout' | 'stderr';
  time: string;
  line: string;
}
export interface LogPage {
  pid: string;
  attempt: number;
  lines: LogLine[];
  dropped_bytes: number;
  ended: boolean;
  next: string | null;
}

/** A refusal in the coordinator's `{"error": {code, message}}` envelope. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (method !== 'GET') headers['x-libos-console'] = '1';
  if (body !== undefined) headers['content-type'] = 'application/json';
  const answer = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await answer.text();
  const parsed: unknown = text ? JSON.parse(text) : undefined;
  if (!answer.ok) {
    const error = (parsed as { error?: { code?: string; message?: string } } | undefined)?.error;
    throw new ApiError(
      answer.status,
      error?.code ?? 'unknown',
      error?.message ?? `${answer.status} from ${path}`,
    );
  }
  return parsed as T;
}

const query = (params: Record<string, string | number | undefined>) => {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params))
    if (value !== undefined && value !== '') search.set(key, String(value));
  const text = search.toString();
  return text ? `?${text}` : '';
};
const p = (pid: string) => `/v1/admin/processes/${encodeURIComponent(pid)}`;

export const api = {
  listProcesses: (filters: { status?: string; image?: string; roots?: boolean; limit?: number }) =>
    call<{ processes: ProcessView[]; next_cursor: string | null }>(
      'GET',
      `/v1/admin/processes${query({ ...filters, roots: filters.roots ? 'true' : undefined })}`,
    ),
  /** Each root's descendants by status, from counters the tree keeps (one call for a page of roots). */
  treeCounts: (roots: string[]) =>
    call<{ trees: TreeCounts[] }>('GET', `/v1/admin/trees/counts${query({ roots: roots.join(',') })}`),
  process: (pid: string) => call<ProcessView>('GET', p(pid)),
  describe: (pid: string) => call<Describe>('GET', `${p(pid)}/describe`),
  tree: (pid: string, maxNodes = 5000) =>
    call<{ pid: string; nodes: TreeNode[]; truncated: boolean }>(
      'GET',
      `${p(pid)}/tree${query({ max_nodes: maxNodes })}`,
    ),
  messages: (pid: string) =>
    call<{ messages: MessageView[]; unacked_count: number; acked_count: number }>(
      'GET',
      `${p(pid)}/messages?limit=200`,
    ),
  objects: (pid: string) => call<{ objects: ObjectEntry[] }>('GET', `${p(pid)}/objects`),
  object: (oid: string) =>
    call<{ oid: string; payload?: unknown; [field: string]: unknown }>(
      'GET',
      `/v1/admin/objects/${encodeURIComponent(oid)}`,
    ),
  logs: (pid: string, attempt?: number) => call<LogPage>('GET', `${p(pid)}/logs${query({ attempt })}`),
  image: (name: string) =>
    call<{ spec: { pool: string } }>('GET', `/v1/admin/images/${encodeURIComponent(name)}`),
  signal: (pid: string, signal: 'pause' | 'resume' | 'cancel' | 'terminate', reason?: string) =>
    call<ProcessView>('POST', `${p(pid)}/signal`, reason ? { signal, reason } : { signal }),
  /** The live stream of a subtree's changes (the cookie authenticates it). */
  eventsUrl: (pid: string) => `${p(pid)}/events`,
  logsFollowUrl: (pid: string, attempt: number, after: string | null) =>
    `${p(pid)}/logs${query({ attempt, follow: 'true', after: after ?? undefined })}`,
};

export const TERMINAL: ReadonlySet<string> = new Set(['exited', 'failed', 'killed']);

/**
 * A launch job's page on Bull Board, through the coordinator's redirect: which of the pool's
 * queues holds the job (its tree's shard) is the coordinator's to say.
 */
export const boardJobUrl = (pool: string, pid: string, attempt: number) =>
  `/admin/launch-jobs/${encodeURIComponent(pool)}/${encodeURIComponent(pid)}/${attempt}`;
