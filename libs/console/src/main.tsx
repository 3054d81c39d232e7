import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { Process } from './pages/Process.js';
import { Processes } from './pages/Processes.js';
import { Tree } from './pages/Tree.js';
import './style.css';

type Route = { page: 'list' } | { page: 'tree'; pid: string } | { page: 'process'; pid: string };

/** Hash routes (`#/tree/<pid>`, `#/p/<pid>`): the coordinator serves one page at /ui/. */
function route(hash: string): Route {
  const match = /^#\/(tree|p)\/([^/?#]+)$/.exec(hash);
  if (!match) return { page: 'list' };
  const pid = decodeURIComponent(match[2] as string);
  return match[1] === 'tree' ? { page: 'tree', pid } : { page: 'process', pid };
}

function App() {
  const [current, setCurrent] = useState(() => route(location.hash));
  useEffect(() => {
    const onHash = () => setCurrent(route(location.hash));
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  return (
    <>
      <header class="top">
        <a class="brand" href="#/">
          libos console
        </a>
        <nav aria-label="main">
          <a href="#/">Processes</a>
          <a href="/admin/queues">Bull Board</a>
        </nav>
        <form method="post" action="/ui/logout">
          <button type="submit">Log out</button>
        </form>
      </header>
      <main>
        {current.page === 'list' && <Processes />}
        {current.page === 'tree' && <Tree key={current.pid} pid={current.pid} />}
        {current.page === 'process' && <Process key={current.pid} pid={current.pid} />}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app') as HTMLElement);
