import { memo } from 'preact/compat';
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, type TreeNode } from '../api.js';
import { Burns, Problem, StatusBadge } from '../format.js';
import { type Change, throttle, useSubtreeEvents } from '../live.js';

/** How often a burst of changes re-reads the tree (budgets, new children): once a second at most. */
const RELOAD_MS = 1000;
/** Status changes arriving within this window are drawn in one render. */
const BATCH_MS = 50;

/** Keeps the old node object where nothing changed, so its memoized row is not drawn again. */
function merge(current: Map<string, TreeNode> | undefined, fresh: TreeNode[]): Map<string, TreeNode> {
  const next = new Map<string, TreeNode>();
  for (const node of fresh) {
    const old = current?.get(node.pid);
    const same =
      old !== undefined &&
      old.status === node.status &&
      old.updated_at === node.updated_at &&
      old.child_count === node.child_count;
    next.set(node.pid, same ? old : node);
  }
  return next;
}

/**
 * One root's whole tree, live: statuses change in place from the event stream at once; new
 * children and budgets arrive with a throttled re-read of the tree (one call, not one per node).
 */
export function Tree({ pid }: { pid: string }) {
  const [nodes, setNodes] = useState<Map<string, TreeNode> | undefined>();
  const [truncated, setTruncated] = useState(false);
  const [problem, setProblem] = useState<string | undefined>();
  const [collapsed, setCollapsed] = useState<ReadonlySet<string>>(new Set());
  const reload = useRef<ReturnType<typeof throttle> | undefined>(undefined);

  useEffect(() => {
    setNodes(undefined);
    const read = () =>
      api.tree(pid).then(
        (tree) => {
          setNodes((current) => merge(current, tree.nodes));
          setTruncated(tree.truncated);
          setProblem(undefined);
        },
        (error: Error) => setProblem(error.message),
      );
    reload.current = throttle(() => void read(), RELOAD_MS);
    return () => reload.current?.cancel();
  }, [pid]);

  const pending = useRef<Change[]>([]);
  const flush = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(flush.current), []);
  const apply = () => {
    flush.current = undefined;
    const changes = pending.current;
    pending.current = [];
    setNodes((current) => {
      if (!current) return current;
      const next = new Map(current);
      for (const change of changes) {
        const node = next.get(change.pid);
        // A change older than what the node shows (a re-read overtook it) is dropped.
        if (node && !(node.gen !== undefined && node.gen > change.gen)) {
          next.set(change.pid, { ...node, status: change.status as TreeNode['status'], gen: change.gen });
        }
      }
      return next;
    });
  };
  useSubtreeEvents(api.eventsUrl(pid), {
    reload: () => reload.current?.(),
    changed: (changes: Change[]) => {
      pending.current.push(...changes);
      flush.current ??= setTimeout(apply, BATCH_MS);
      reload.current?.();
    },
  });

  const children = useMemo(() => {
    const byParent = new Map<string, TreeNode[]>();
    for (const node of nodes?.values() ?? []) {
      if (node.parent_pid === null || node.pid === pid) continue;
      const list = byParent.get(node.parent_pid) ?? [];
      list.push(node);
      byParent.set(node.parent_pid, list);
    }
    return byParent;
  }, [nodes, pid]);

  const counts = useMemo(() => {
    const byStatus: Record<string, number> = {};
    for (const node of nodes?.values() ?? []) byStatus[node.status] = (byStatus[node.status] ?? 0) + 1;
    return byStatus;
  }, [nodes]);

  const toggle = useCallback(
    (id: string) =>
      setCollapsed((current) => {
        const next = new Set(current);
        if (next.has(id)) next.delete(id);
        else next.add(id);
        return next;
      }),
    [],
  );

  const root = nodes?.get(pid);
  const render = (node: TreeNode) => {
    const kids = children.get(node.pid) ?? [];
    const open = !collapsed.has(node.pid);
    return (
      <li key={node.pid} data-pid={node.pid} data-status={node.status}>
        <Row node={node} kids={kids.length} open={open} onToggle={toggle} />
        {kids.length > 0 && open && <ul>{kids.map(render)}</ul>}
      </li>
    );
  };

  return (
    <section aria-labelledby="tree-title">
      <h1 id="tree-title">
        Tree of <a href={`#/p/${pid}`}>{pid}</a>
      </h1>
      <Problem text={problem} />
      <p class="counts" aria-live="polite">
        {nodes ? `${nodes.size} process(es): ` : ''}
        {Object.entries(counts)
          .map(([status, n]) => `${n} ${status}`)
          .join(', ')}
        {truncated ? ' (truncated: the deepest levels are not shown)' : ''}
      </p>
      <p class="hint" id="tree-keys">
        Keys on a pid: ↑ ↓ move, ← collapses (or goes to the parent), → expands (or goes to the first child),
        Home and End, Enter opens the process.
      </p>
      {root ? (
        <ul
          aria-label={`process tree of ${pid}`}
          aria-describedby="tree-keys"
          class="tree"
          onKeyDown={treeKeys}
        >
          {render(root)}
        </ul>
      ) : (
        !problem && <p>Loading…</p>
      )}
    </section>
  );
}

/**
 * Arrow keys over the tree's pid links (one handler for the whole tree, not one per row): the
 * links are the focus stops, the toggles collapse and expand.
 */
function treeKeys(event: KeyboardEvent) {
  const link = event.target as HTMLElement;
  if (!link.matches('a.pid')) return;
  const tree = event.currentTarget as HTMLElement;
  const item = link.closest('li') as HTMLElement;
  const toggle = item.querySelector(':scope > .node > button.toggle') as HTMLButtonElement | null;
  const open = toggle?.getAttribute('aria-expanded') === 'true';
  const links = () => [...tree.querySelectorAll<HTMLElement>('a.pid')];
  let next: HTMLElement | null | undefined;
  switch (event.key) {
    case 'ArrowDown':
    case 'ArrowUp': {
      const all = links();
      next = all[all.indexOf(link) + (event.key === 'ArrowDown' ? 1 : -1)];
      break;
    }
    case 'Home':
      next = links()[0];
      break;
    case 'End':
      next = links().at(-1);
      break;
    case 'ArrowRight':
      if (toggle && !open) toggle.click();
      else next = item.querySelector<HTMLElement>(':scope > ul > li a.pid');
      break;
    case 'ArrowLeft':
      if (toggle && open) toggle.click();
      else next = item.parentElement?.closest('li')?.querySelector<HTMLElement>(':scope > .node a.pid');
      break;
    default:
      return;
  }
  event.preventDefault();
  next?.focus();
}

/** One node's line; drawn again only when its node object, child count or open state changes. */
const Row = memo(function Row({
  node,
  kids,
  open,
  onToggle,
}: {
  node: TreeNode;
  kids: number;
  open: boolean;
  onToggle: (pid: string) => void;
}) {
  return (
    <div class="node">
      {kids > 0 ? (
        <button
          type="button"
          class="toggle"
          aria-expanded={open}
          aria-label={`${open ? 'Collapse' : 'Expand'} ${node.pid} (${kids} children)`}
          onClick={() => onToggle(node.pid)}
        >
          {open ? '▾' : '▸'}
        </button>
      ) : (
        <span class="toggle-space" />
      )}
      <StatusBadge status={node.status} />
      <a class="pid" href={`#/p/${node.pid}`}>
        {node.pid}
      </a>
      <span class="image">{node.image ?? ''}</span>
      <span class="goal" title={node.goal}>
        {node.goal}
      </span>
      {node.outcome_type && (
        <span class="outcome" title={node.outcome_reason ?? undefined}>
          {node.outcome_type}
        </span>
      )}
      <Burns budget={node.resource_budget} />
    </div>
  );
});
