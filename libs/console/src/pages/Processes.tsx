import { useEffect, useState } from 'preact/hooks';
import { api, type ProcessView, STATUSES } from '../api.js';
import { age, Burns, StatusBadge } from '../format.js';

/** Roots, newest first: one list call per refresh, never one per process. */
export function Processes() {
  const [status, setStatus] = useState('');
  const [image, setImage] = useState('');
  const [text, setText] = useState('');
  const [rows, setRows] = useState<ProcessView[] | undefined>();
  const [problem, setProblem] = useState<string | undefined>();

  useEffect(() => {
    let live = true;
    const load = () =>
      api
        .listProcesses({ status: status || undefined, image: image || undefined, roots: true, limit: 200 })
        .then(
          (page) => {
            if (!live) return;
            // Servers without the roots filter list children too: keep the roots.
            const roots = page.processes.filter((p) => p.parent_pid === null);
            roots.sort((a, b) => b.created_at.localeCompare(a.created_at));
            setRows(roots);
            setProblem(undefined);
          },
          (error: Error) => live && setProblem(error.message),
        );
    void load();
    const timer = setInterval(load, 5000);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [status, image]);

  const needle = text.trim().toLowerCase();
  const shown = (rows ?? []).filter(
    (p) => !needle || p.pid.toLowerCase().includes(needle) || p.goal.toLowerCase().includes(needle),
  );
  return (
    <section aria-labelledby="processes-title">
      <h1 id="processes-title">Processes</h1>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Search pid or goal
          <input type="search" value={text} onInput={(e) => setText(e.currentTarget.value)} />
        </label>
        <label>
          Image
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
      {problem && (
        <p role="alert" class="problem">
          {problem}
        </p>
      )}
      {rows === undefined ? (
        <p>Loading…</p>
      ) : (
        <table class="list">
          <caption>{shown.length} root process(es), newest first</caption>
          <thead>
            <tr>
              <th scope="col">pid</th>
              <th scope="col">status</th>
              <th scope="col">image</th>
              <th scope="col">goal</th>
              <th scope="col">age</th>
              <th scope="col">children</th>
              <th scope="col">budget burn</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((p) => (
              <tr key={p.pid} data-pid={p.pid}>
                <td>
                  <a href={`#/tree/${p.pid}`}>{p.pid}</a>
                </td>
                <td>
                  <StatusBadge status={p.status} />
                </td>
                <td>{p.image ?? '—'}</td>
                <td class="goal">
                  <a href={`#/p/${p.pid}`}>{p.goal}</a>
                </td>
                <td>{age(p.created_at)}</td>
                <td>{p.resource_budget.children?.used ?? ''}</td>
                <td>
                  <Burns budget={p.resource_budget} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
