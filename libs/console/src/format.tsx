import type { ComponentChildren } from 'preact';
import type { Budget, BudgetDimension, Dimension } from './api.js';
import { DIMENSIONS, STATUSES } from './api.js';

export function age(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '';
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ${seconds % 60}s`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h ${Math.floor((seconds % 3600) / 60)}m`;
  return `${Math.floor(seconds / 86_400)}d`;
}

export function time(iso: string | null | undefined): string {
  return iso ? new Date(iso).toLocaleString() : '';
}

const LABEL: Record<Dimension, string> = {
  tokens: 'tokens',
  cost_usd: 'cost',
  steps: 'steps',
  wall_ms: 'wall',
  children: 'children',
  object_bytes: 'objects',
};

export function amount(dimension: Dimension, value: number | null): string {
  if (value === null) return '∞';
  if (dimension === 'cost_usd') return `$${value.toFixed(4)}`;
  if (dimension === 'wall_ms') return `${(value / 1000).toFixed(1)}s`;
  if (dimension === 'object_bytes') return `${value} B`;
  return String(value);
}

/** Used (solid) and reserved (hatched) as shares of the limit; an unlimited dimension shows its use only. */
export function Burn({ dimension, view }: { dimension: Dimension; view: BudgetDimension }) {
  const share = (n: number) => (view.limit ? Math.min(100, (n / view.limit) * 100) : 0);
  const used = share(view.used);
  const reserved = Math.min(100 - used, share(view.reserved));
  const label = `${LABEL[dimension]}: ${amount(dimension, view.used)} used, ${amount(dimension, view.reserved)} reserved of ${amount(dimension, view.limit)}`;
  return (
    <span class="burn" title={label} role="img" aria-label={label}>
      <span class="burn-name">{LABEL[dimension]}</span>
      <span class="burn-track">
        <span class={`burn-used${used >= 90 ? ' hot' : ''}`} style={{ width: `${used}%` }} />
        <span class="burn-reserved" style={{ width: `${reserved}%` }} />
      </span>
    </span>
  );
}

export function Burns({ budget }: { budget: Budget }) {
  return (
    <span class="burns">
      {DIMENSIONS.map((d) => {
        const view = budget[d];
        return view ? <Burn key={d} dimension={d} view={view} /> : null;
      })}
    </span>
  );
}

export function StatusBadge({ status }: { status: string }) {
  return <span class={`status status-${status}`}>{status}</span>;
}

export function Json({ value }: { value: unknown }) {
  return <pre class="json">{JSON.stringify(value, null, 2)}</pre>;
}

/** A refusal or failure the page shows (announced to screen readers). */
export function Problem({ text }: { text: string | undefined }) {
  return text ? (
    <p role="alert" class="problem">
      {text}
    </p>
  ) : null;
}

/**
 * A table of rows: one header cell per column, one cell per column per row. The pages' tables
 * (roots, budget, capabilities, attempts, mailbox, objects) are all this.
 */
export function DataTable<Row>({
  columns,
  rows,
  rowKey,
  caption,
  class: className,
  rowProps,
}: {
  columns: ReadonlyArray<{ title: string; cell: (row: Row) => ComponentChildren; class?: string }>;
  rows: readonly Row[];
  rowKey: (row: Row, index: number) => string | number;
  caption?: ComponentChildren;
  class?: string;
  rowProps?: (row: Row) => Record<string, string>;
}) {
  return (
    <table class={className}>
      {caption !== undefined && <caption>{caption}</caption>}
      <thead>
        <tr>
          {columns.map((c) => (
            <th key={c.title} scope="col">
              {c.title}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((row, index) => (
          <tr key={rowKey(row, index)} {...rowProps?.(row)}>
            {columns.map((c) => (
              <td key={c.title} class={c.class}>
                {c.cell(row)}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Counts by status as small badges, in the order statuses run (`3 running, 40 exited`). */
export function StatusCounts({ counts }: { counts: Partial<Record<string, number>> }) {
  const shown = STATUSES.filter((s) => (counts[s] ?? 0) > 0);
  if (shown.length === 0) return <span class="muted">none</span>;
  return (
    <span class="status-counts">
      {shown.map((s) => (
        <span key={s} class={`count status-${s}`} data-status={s} title={`${counts[s]} ${s}`}>
          {counts[s]} {s}
        </span>
      ))}
    </span>
  );
}
