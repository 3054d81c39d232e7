import { useEffect, useState } from 'preact/hooks';
import { api, type ProcessView, STATUSES, type TreeCounts } from '../api.js';
import { age, Burns, DataTable, Problem, StatusBadge, StatusCounts } from '../format.js';

/** How often the list is read again. */
const REFRESH_MS = 5000;
/** Roots listed (one page of the admin list; the counts route takes as many). */
const ROOTS_SHOWN = 200;

/** Whether the search text finds the root by pid, goal or image. */
function found(p: ProcessView, needle: string): boolean {
  return (
    !needle ||
    p.pid.toLowerCase().includes(needle) ||
    p.goal.toLowerCase().includes(needle) ||
    (p.image ?? '').toLowerCase().includes(needle)
  );
}

/**
 * Roots, newest first, each with its tree's descendants by status and its budget burn: two
 * calls per refresh (the list, then the counts the trees keep), never one per process.
 */
export function Processes() {
  const [status, setStatus] = useState('');
  const [image, setImage] = useState('');
  const [text, setText] = useState('');
  const [rows, setRows] = useState<ProcessView[] | undefined>();
  const [counts, setCounts] = useState<ReadonlyMap<string, TreeCounts>>(new Map());
  const [problem, setProblem] = useState<string | undefined>();

  useEffect(() => {
    let live = true;
    const load = async () => {
      try {
        const page = await api.listProcesses({
          status: status || undefined,
          image: image || undefined,
          roots: true,
          limit: ROOTS_SHOWN,
        });
        if (!live) return; // left the page meanwhile: no counts call
        const roots = page.processes.filter((p) => p.parent_pid === null);
        roots.sort((a, b) => b.created_at.localeCompare(a.created_at));
        const trees = roots.length ? (await api.treeCounts(roots.map((p) => p.pid))).trees : [];
        if (!live) return;
        setRows(roots);
        setCounts(new Map(trees.map((t) => [t.root, t])));
        setProblem(undefined);
      } catch (error) {
        if (live) setProblem((error as Error).message);
      }
    };
    void load();
    const timer = setInterval(load, REFRESH_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [status, image]);

  const needle = text.trim().toLowerCase();
  const shown = (rows ?? []).filter((p) => found(p, needle));
  return (
    <section aria-labelledby="processes-title">
      <h1 id="processes-title">Processes</h1>
      <form class="filters" aria-label="search roots" onSubmit={(e) => e.preventDefault()}>
        <label>
          Search pid, goal or image
          <input type="search" value={text} onInput={(e) => setText(e.currentTarget.value)} />
        </label>
        <label>
          Image (exact)
          <input value={image} onChange={(e) => setImage(e.currentTarget.value.trim())} />
        </label>
        <label>
          Status
          <select value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            <option value="">any</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
      </form>
      <Problem text={problem} />
      {rows === undefined ? (
        <p>Loading…</p>
      ) : (
        <DataTable
          class="list"
          caption={`${shown.length} root process(es), newest first`}
          rows={shown}
          rowKey={(p) => p.pid}
          rowProps={(p) => ({ 'data-pid': p.pid })}
          columns={[
            { title: 'pid', cell: (p) => <a href={`#/tree/${p.pid}`}>{p.pid}</a> },
            { title: 'status', cell: (p) => <StatusBadge status={p.status} /> },
            { title: 'image', cell: (p) => p.image ?? '—' },
            { title: 'goal', class: 'goal', cell: (p) => <a href={`#/p/${p.pid}`}>{p.goal}</a> },
            { title: 'age', cell: (p) => age(p.created_at) },
            { title: 'children', class: 'children', cell: (p) => <Descendants counts={counts.get(p.pid)} /> },
            { title: 'budget burn', cell: (p) => <Burns budget={p.resource_budget} /> },
          ]}
        />
      )}
    </section>
  );
}

function Descendants({ counts }: { counts: TreeCounts | undefined }) {
  if (!counts) return null;
  if (!counts.descendants)
    return <span class="muted">{counts.counted ? 'gone' : 'not counted (an older tree)'}</span>;
  return (
    <span data-total={counts.descendants.total}>
      <strong>{counts.descendants.total}</strong> <StatusCounts counts={counts.descendants.by_status} />
    </span>
  );
}
