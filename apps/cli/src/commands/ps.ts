import type { BudgetView, ProcessView } from '@libos/protocol';
import { paint, paintStatus, table } from '../output.js';

export function outcomeText(p: Pick<ProcessView, 'outcome'>): string {
  if (!p.outcome) return '';
  return p.outcome.reason ? `${p.outcome.type}: ${p.outcome.reason}` : p.outcome.type;
}

/** `used/limit` for the dimensions that have a limit or any use. */
export function budgetText(budget: BudgetView): string {
  const parts: string[] = [];
  for (const [dim, view] of Object.entries(budget)) {
    if (view.limit === null && view.used === 0) continue;
    const used = dim === 'cost_usd' ? view.used.toFixed(4) : String(view.used);
    parts.push(`${dim} ${used}/${view.limit ?? '∞'}`);
  }
  return parts.join(', ');
}

/** How long ago `iso` was, compactly: `45s`, `12m`, `3h`, `2d`. */
export function ago(iso: string, now = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)}m`;
  if (seconds < 172_800) return `${Math.round(seconds / 3600)}h`;
  return `${Math.round(seconds / 86_400)}d`;
}

/** Newest first as the coordinator lists them; AGE since creation, STARTED/ENDED how long ago. */
export function processTable(processes: ProcessView[], now = Date.now()): string {
  return table(
    ['PID', 'PARENT', 'STATUS', 'IMAGE', 'AGE', 'STARTED', 'ENDED', 'OUTCOME', 'GOAL'],
    processes.map((p) => [
      p.pid,
      p.parent_pid ?? '-',
      paintStatus(p.status),
      p.image ?? '-',
      ago(p.created_at, now),
      p.started_at ? ago(p.started_at, now) : '-',
      p.ended_at ? ago(p.ended_at, now) : '-',
      outcomeText(p),
      p.goal.length > 48 ? `${p.goal.slice(0, 47)}…` : p.goal,
    ]),
  );
}

/** Processes as trees under their roots, with status colours, outcomes and budgets. */
export function processTree(processes: ProcessView[], options: { budgets?: boolean } = {}): string {
  const byPid = new Map(processes.map((p) => [p.pid, p]));
  const children = new Map<string, ProcessView[]>();
  const roots: ProcessView[] = [];
  for (const p of processes) {
    if (p.parent_pid && byPid.has(p.parent_pid)) {
      const list = children.get(p.parent_pid) ?? [];
      list.push(p);
      children.set(p.parent_pid, list);
    } else {
      roots.push(p);
    }
  }
  // Pids of one tree are `<root>.<n>`: order siblings by n, not as strings (".10" after ".9").
  const order = (p: ProcessView) => Number(p.pid.slice(p.pid.indexOf('.') + 1)) || 0;
  for (const list of children.values()) list.sort((a, b) => order(a) - order(b));
  const lines: string[] = [];
  const walk = (p: ProcessView, prefix: string, last: boolean, top: boolean) => {
    const branch = top ? '' : last ? '└─ ' : '├─ ';
    const outcome = outcomeText(p);
    const budget = options.budgets ? budgetText(p.resource_budget) : '';
    const detail = [outcome && paint('grey', outcome), budget && paint('grey', `[${budget}]`)].filter(
      Boolean,
    );
    lines.push(
      `${prefix}${branch}${paint('bold', p.pid)} ${paintStatus(p.status)} ${p.goal} ${detail.join(' ')}`.trimEnd(),
    );
    const kids = children.get(p.pid) ?? [];
    kids.forEach((kid, i) => {
      walk(kid, top ? prefix : prefix + (last ? '   ' : '│  '), i === kids.length - 1, false);
    });
  };
  roots.forEach((root, i) => {
    walk(root, '', i === roots.length - 1, true);
  });
  return lines.join('\n');
}
