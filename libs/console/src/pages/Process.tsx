import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import {
  type AttemptView,
  api,
  boardJobUrl,
  DIMENSIONS,
  type LogLine,
  type LogPage,
  type MessageView,
  type ObjectEntry,
  type ProcessView,
  TERMINAL,
} from '../api.js';
import { amount, Burn, Json, StatusBadge, time } from '../format.js';
import { useSubtreeEvents } from '../live.js';

/** A result longer than this (pretty JSON characters) is cut until the operator asks for all. */
const RESULT_PREVIEW_CHARS = 4000;
/** Log lines kept on the page (the oldest go first). */
const LOG_LINES_KEPT = 2000;

type Action = 'pause' | 'resume' | 'cancel' | 'terminate';

export function Process({ pid }: { pid: string }) {
  const [view, setView] = useState<ProcessView | undefined>();
  const [attempts, setAttempts] = useState<AttemptView[] | undefined>();
  const [problem, setProblem] = useState<string | undefined>();
  const [pool, setPool] = useState<string | undefined>();

  const load = useCallback(() => {
    api.describe(pid).then(
      (described) => {
        setView(described.process);
        setAttempts(described.attempts);
        setProblem(undefined);
      },
      // A coordinator without the describe read: the process view alone.
      () =>
        api.process(pid).then(
          (process) => {
            setView(process);
            setProblem(undefined);
          },
          (error: Error) => setProblem(error.message),
        ),
    );
  }, [pid]);

  useEffect(load, [load]);
  useSubtreeEvents(api.eventsUrl(pid), {
    reload: load,
    changed: (changes) => {
      if (changes.some((c) => c.pid === pid)) load();
    },
  });
  useEffect(() => {
    if (view?.image)
      api.image(view.image).then(
        (image) => setPool(image.spec.pool),
        () => undefined,
      );
  }, [view?.image]);

  if (!view)
    return problem ? (
      <p role="alert" class="problem">
        {problem}
      </p>
    ) : (
      <p>Loading…</p>
    );
  return (
    <article aria-labelledby="process-title" class="process">
      <h1 id="process-title">
        Process {view.pid} <StatusBadge status={view.status} />
      </h1>
      {problem && (
        <p role="alert" class="problem">
          {problem}
        </p>
      )}
      <nav class="links" aria-label="related">
        <a href={`#/tree/${view.root_pid}`}>Tree of {view.root_pid}</a>
        {view.parent_pid && <a href={`#/p/${view.parent_pid}`}>Parent {view.parent_pid}</a>}
        {pool && view.attempt > 0 && (
          <a href={boardJobUrl(pool, view.pid, view.attempt)}>Launch job on Bull Board</a>
        )}
      </nav>
      <Controls view={view} onDone={load} />
      <dl class="facts">
        <dt>Goal</dt>
        <dd class="goal-full">{view.goal}</dd>
        <dt>Image</dt>
        <dd>{view.image ?? '—'}</dd>
        <dt>Working directory</dt>
        <dd>
          <code>{view.cwd}</code>
        </dd>
        <dt>Driver · mode</dt>
        <dd>
          {view.driver} · {view.mode}
        </dd>
        <dt>Created · started · ended</dt>
        <dd>
          {time(view.created_at)} · {time(view.started_at)} · {time(view.ended_at)}
        </dd>
        {view.pause_reason && (
          <>
            <dt>Pause reason</dt>
            <dd>{view.pause_reason}</dd>
          </>
        )}
        {view.pending_signal && (
          <>
            <dt>Pending signal</dt>
            <dd>
              {view.pending_signal.signal} {view.pending_signal.reason ?? ''}
            </dd>
          </>
        )}
      </dl>
      <h2>Budget</h2>
      <table class="budget">
        <thead>
          <tr>
            <th scope="col">dimension</th>
            <th scope="col">limit</th>
            <th scope="col">used</th>
            <th scope="col">reserved</th>
            <th scope="col">remaining</th>
            <th scope="col">burn</th>
          </tr>
        </thead>
        <tbody>
          {DIMENSIONS.map((d) => {
            const b = view.resource_budget[d];
            if (!b) return null;
            return (
              <tr key={d}>
                <th scope="row">{d}</th>
                <td>{amount(d, b.limit)}</td>
                <td>{amount(d, b.used)}</td>
                <td>{amount(d, b.reserved)}</td>
                <td>{amount(d, b.remaining)}</td>
                <td>
                  <Burn dimension={d} view={b} />
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <h2>Capabilities</h2>
      {view.capabilities.length === 0 && <p>None.</p>}
      <table hidden={view.capabilities.length === 0}>
        <thead>
          <tr>
            <th scope="col">resource</th>
            <th scope="col">rights</th>
            <th scope="col">delegable</th>
            <th scope="col">expires</th>
            <th scope="col">constraints</th>
          </tr>
        </thead>
        <tbody>
          {view.capabilities.map((c, i) => (
            <tr key={i}>
              <td>
                <code>{c.resource}</code>
              </td>
              <td>{c.rights.join(', ')}</td>
              <td>{c.delegable ? 'yes' : 'no'}</td>
              <td>{c.expires_at ? time(c.expires_at) : 'never'}</td>
              <td>{Object.keys(c.constraints).length ? JSON.stringify(c.constraints) : ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Attempts</h2>
      {attempts === undefined ? (
        <p class="unfinished">
          The attempt history needs the coordinator's describe read (not on this server).
        </p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">#</th>
              <th scope="col">worker</th>
              <th scope="col">claimed</th>
              <th scope="col">ended</th>
              <th scope="col">outcome</th>
              <th scope="col">reason</th>
            </tr>
          </thead>
          <tbody>
            {attempts.map((a) => (
              <tr key={a.attempt}>
                <td>{a.attempt}</td>
                <td>{a.worker}</td>
                <td>{time(a.claimed_at)}</td>
                <td>{time(a.ended_at)}</td>
                <td>{a.ended_as ?? ''}</td>
                <td>{a.reason ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>Wait state</h2>
      {view.wait_state ? <Json value={view.wait_state} /> : <p>Not waiting.</p>}
      <h2>Outcome</h2>
      {view.outcome ? <Json value={view.outcome} /> : <p>None yet.</p>}
      <h2>Result</h2>
      {view.result_oid ? <Result oid={view.result_oid} /> : <p>No result object.</p>}
      <Messages pid={pid} />
      <Objects pid={pid} />
      <Logs pid={pid} attempt={view.attempt} ended={TERMINAL.has(view.status)} />
    </article>
  );
}

/** Pause, resume, cancel, terminate through the admin signal route. */
function Controls({ view, onDone }: { view: ProcessView; onDone: () => void }) {
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | undefined>();
  if (TERMINAL.has(view.status)) return null;
  const send = async (action: Action) => {
    if (
      action === 'terminate' &&
      !window.confirm(`Terminate ${view.pid}? Its process group is killed after its grace.`)
    )
      return;
    setBusy(true);
    try {
      await api.signal(view.pid, action, reason.trim() || undefined);
      setProblem(undefined);
      onDone();
    } catch (error) {
      setProblem((error as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const paused = view.status === 'paused';
  return (
    <section class="controls" aria-label="signals">
      {view.resume_gate === 'host' && (
        <p class="gate" role="note">
          Host-gated: this process's last execution went stale (its worker stopped renewing the lease), so the
          kernel cannot know whether that execution is still running somewhere. Only an operator may resume
          it, and only once sure the old execution is gone: resume launches a new attempt.
        </p>
      )}
      <label>
        Reason
        <input value={reason} onInput={(e) => setReason(e.currentTarget.value)} maxLength={1000} />
      </label>
      <button type="button" disabled={busy || paused} onClick={() => send('pause')}>
        Pause
      </button>
      <button type="button" disabled={busy || !paused} onClick={() => send('resume')}>
        Resume
      </button>
      <button type="button" disabled={busy} onClick={() => send('cancel')}>
        Cancel
      </button>
      <button type="button" class="danger" disabled={busy} onClick={() => send('terminate')}>
        Terminate
      </button>
      {problem && (
        <p role="alert" class="problem">
          {problem}
        </p>
      )}
    </section>
  );
}

function Result({ oid }: { oid: string }) {
  const [text, setText] = useState<string | undefined>();
  const [all, setAll] = useState(false);
  useEffect(() => {
    api.object(oid).then(
      (object) => setText(JSON.stringify(object.payload ?? object, null, 2)),
      (error: Error) => setText(`(cannot read ${oid}: ${error.message})`),
    );
  }, [oid]);
  if (text === undefined) return <p>Loading {oid}…</p>;
  const cut = !all && text.length > RESULT_PREVIEW_CHARS;
  return (
    <div class="result">
      <pre class="json">{cut ? `${text.slice(0, RESULT_PREVIEW_CHARS)}\n…` : text}</pre>
      {cut && (
        <button type="button" onClick={() => setAll(true)}>
          Show all {text.length} characters
        </button>
      )}
    </div>
  );
}

function Messages({ pid }: { pid: string }) {
  const [state, setState] = useState<{ messages: MessageView[]; note?: string } | undefined>();
  const load = useCallback(() => {
    api.messages(pid).then(
      (page) =>
        setState({
          messages: page.messages,
          note: `${page.unacked_count} unread, ${page.acked_count} acknowledged`,
        }),
      (error: Error & { status?: number }) =>
        setState({
          messages: [],
          note: error.status === 404 ? 'The mailbox read is not on this coordinator yet.' : error.message,
        }),
    );
  }, [pid]);
  useEffect(load, [load]);
  return (
    <section aria-labelledby="messages-title">
      <h2 id="messages-title">
        Mailbox{' '}
        <button type="button" class="small" onClick={load}>
          Refresh
        </button>
      </h2>
      <p class="note">Read only: nothing here acknowledges a message. {state?.note}</p>
      {state && state.messages.length > 0 && (
        <table class="messages">
          <thead>
            <tr>
              <th scope="col">id</th>
              <th scope="col">channel</th>
              <th scope="col">kind</th>
              <th scope="col">sender</th>
              <th scope="col">correlation</th>
              <th scope="col">reply to</th>
              <th scope="col">acked</th>
              <th scope="col">payload</th>
            </tr>
          </thead>
          <tbody>
            {state.messages.map((m) => (
              <tr key={m.message_id} id={`m-${m.message_id}`}>
                <td>{m.message_id}</td>
                <td>{String(m.channel ?? '')}</td>
                <td>{String(m.kind ?? '')}</td>
                <td>{senderLink(m.sender)}</td>
                <td>{String(m.correlation_id ?? '')}</td>
                <td>{m.reply_to ? <a href={`#m-${String(m.reply_to)}`}>{String(m.reply_to)}</a> : ''}</td>
                <td>{m.acked ? 'yes' : 'no'}</td>
                <td>
                  <code>{JSON.stringify(m.payload ?? null).slice(0, 200)}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function senderLink(sender: unknown) {
  if (typeof sender === 'string' && /^p[0-9a-z]+(\.\d+)*$/.test(sender))
    return <a href={`#/p/${sender}`}>{sender}</a>;
  return typeof sender === 'string' ? sender : JSON.stringify(sender ?? '');
}

function Objects({ pid }: { pid: string }) {
  const [objects, setObjects] = useState<ObjectEntry[] | undefined>();
  const [note, setNote] = useState<string | undefined>();
  useEffect(() => {
    api.objects(pid).then(
      (page) => setObjects(page.objects),
      (error: Error & { status?: number }) =>
        setNote(error.status === 404 ? 'The objects read is not on this coordinator yet.' : error.message),
    );
  }, [pid]);
  return (
    <section aria-labelledby="objects-title">
      <h2 id="objects-title">Objects</h2>
      {note && <p class="note">{note}</p>}
      {objects && objects.length === 0 && <p>None.</p>}
      {objects && objects.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">oid</th>
              <th scope="col">kind</th>
              <th scope="col">owner</th>
              <th scope="col">handle</th>
              <th scope="col">version</th>
              <th scope="col">bytes</th>
              <th scope="col">labels</th>
            </tr>
          </thead>
          <tbody>
            {objects.map((o) => (
              <tr key={o.oid}>
                <td>{o.oid}</td>
                <td>{o.kind ?? ''}</td>
                <td>{o.owner ?? 'released'}</td>
                <td>{o.handle ?? (o.owned ? 'owner' : '')}</td>
                <td>{o.version ?? ''}</td>
                <td>{o.size_bytes}</td>
                <td>{o.labels.join(', ')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** The child's output for one attempt: a page, then a live tail until the attempt's log ends. */
function Logs({ pid, attempt, ended }: { pid: string; attempt: number; ended: boolean }) {
  const [lines, setLines] = useState<LogLine[]>([]);
  const [note, setNote] = useState<string | undefined>();
  const [tail, setTail] = useState(true);
  const box = useRef<HTMLPreElement>(null);
  useEffect(() => {
    setLines([]);
    setNote(undefined);
    if (attempt < 1) return;
    let source: EventSource | undefined;
    const add = (page: LogPage) => setLines((current) => [...current, ...page.lines].slice(-LOG_LINES_KEPT));
    api.logs(pid, attempt).then(
      (page) => {
        add(page);
        if (page.ended || !tail) return;
        source = new EventSource(api.logsFollowUrl(pid, attempt, page.next));
        source.addEventListener('page', (event) =>
          add(JSON.parse((event as MessageEvent<string>).data) as LogPage),
        );
        source.addEventListener('end', (event) => {
          add(JSON.parse((event as MessageEvent<string>).data) as LogPage);
          source?.close();
        });
      },
      (error: Error & { status?: number }) =>
        setNote(
          error.status === 404 && /no route/.test(error.message)
            ? 'The logs read is not on this coordinator yet.'
            : error.message,
        ),
    );
    return () => source?.close();
  }, [pid, attempt, tail, ended]);
  useEffect(() => {
    if (box.current) box.current.scrollTop = box.current.scrollHeight;
  }, [lines]);
  return (
    <section aria-labelledby="logs-title">
      <h2 id="logs-title">Logs (attempt {attempt})</h2>
      <label class="inline">
        <input type="checkbox" checked={tail} onChange={(e) => setTail(e.currentTarget.checked)} /> Live tail
      </label>
      {note && <p class="note">{note}</p>}
      <pre class="logs" ref={box} role="log" aria-label="child output">
        {lines.map((l, i) => (
          <span key={i} class={`log-${l.stream}`}>
            {`${l.time.slice(11, 23)} ${l.stream} ${l.line}\n`}
          </span>
        ))}
      </pre>
    </section>
  );
}
