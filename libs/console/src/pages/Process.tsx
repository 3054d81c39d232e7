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
  type Outcome,
  type ProcessView,
  TERMINAL,
} from '../api.js';
import { amount, Burn, DataTable, Json, Problem, StatusBadge, time } from '../format.js';
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

  if (!view) return problem ? <Problem text={problem} /> : <p>Loading…</p>;
  return (
    <article aria-labelledby="process-title" class="process">
      <h1 id="process-title">
        Process {view.pid} <StatusBadge status={view.status} />
      </h1>
      <Problem text={problem} />
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
      <DataTable
        class="budget"
        rows={DIMENSIONS.flatMap((d) => {
          const b = view.resource_budget[d];
          return b ? [{ d, b }] : [];
        })}
        rowKey={(r) => r.d}
        columns={[
          { title: 'dimension', cell: (r) => r.d },
          { title: 'limit', cell: (r) => amount(r.d, r.b.limit) },
          { title: 'used', cell: (r) => amount(r.d, r.b.used) },
          { title: 'reserved', cell: (r) => amount(r.d, r.b.reserved) },
          { title: 'remaining', cell: (r) => amount(r.d, r.b.remaining) },
          { title: 'burn', cell: (r) => <Burn dimension={r.d} view={r.b} /> },
        ]}
      />
      <h2>Capabilities</h2>
      {view.capabilities.length === 0 ? (
        <p>None.</p>
      ) : (
        <DataTable
          class="capabilities"
          rows={view.capabilities}
          rowKey={(_, i) => i}
          columns={[
            { title: 'resource', cell: (c) => <code>{c.resource}</code> },
            { title: 'rights', cell: (c) => c.rights.join(', ') },
            { title: 'delegable', cell: (c) => (c.delegable ? 'yes' : 'no') },
            { title: 'expires', cell: (c) => (c.expires_at ? time(c.expires_at) : 'never') },
            {
              title: 'constraints',
              cell: (c) => (Object.keys(c.constraints).length ? JSON.stringify(c.constraints) : ''),
            },
          ]}
        />
      )}
      <h2>Attempts</h2>
      {attempts === undefined ? (
        <p class="unfinished">
          The attempt history needs the coordinator's describe read (not on this server).
        </p>
      ) : attempts.length === 0 ? (
        <p>None: {view.driver === 'caller' ? 'a caller drives this process' : 'not claimed yet'}.</p>
      ) : (
        <DataTable
          class="attempts"
          rows={attempts}
          rowKey={(a) => a.attempt}
          columns={[
            { title: '#', cell: (a) => a.attempt },
            { title: 'worker', cell: (a) => a.worker },
            // The claim is the start: the process is running from the worker's claim.
            { title: 'claimed (started)', cell: (a) => time(a.claimed_at) },
            { title: 'ended', cell: (a) => time(a.ended_at) },
            { title: 'outcome', cell: (a) => a.ended_as ?? (a.ended_at ? '' : 'running') },
            { title: 'reason', cell: (a) => a.reason ?? '' },
          ]}
        />
      )}
      <h2>Wait state</h2>
      {view.wait_state ? <Json value={view.wait_state} /> : <p>Not waiting.</p>}
      <h2>Outcome</h2>
      {view.outcome ? <OutcomeView outcome={view.outcome} /> : <p>None yet.</p>}
      <h2>Result</h2>
      {view.result_oid ? <Result oid={view.result_oid} /> : <p>No result object.</p>}
      <Messages pid={pid} />
      <Objects pid={pid} />
      <Logs pid={pid} attempt={view.attempt} ended={TERMINAL.has(view.status)} />
    </article>
  );
}

/** What the host gate means, said on the page and again before a resume lifts it. */
const HOST_GATE =
  "Host-gated (stale_execution): this process's last execution went stale (its worker stopped renewing " +
  'the lease), so the kernel cannot know whether that execution is still running somewhere. Only an ' +
  'operator may resume it, and only once sure the old execution is gone (its worker and host are down or ' +
  'the OS process is dead): resume launches a new attempt, and two executions could otherwise run at once.';

/** The question asked before a signal, or none. */
function confirmation(action: Action, view: ProcessView): string | undefined {
  if (action === 'terminate') return `Terminate ${view.pid}? Its process group is killed after its grace.`;
  if (action === 'resume' && view.resume_gate === 'host')
    return `${HOST_GATE}\n\nResume ${view.pid} as attempt ${view.attempt + 1}?`;
  return undefined;
}

/** Pause, resume, cancel, terminate through the admin signal route. */
function Controls({ view, onDone }: { view: ProcessView; onDone: () => void }) {
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | undefined>();
  if (TERMINAL.has(view.status)) return null;
  const send = async (action: Action) => {
    const question = confirmation(action, view);
    if (question && !window.confirm(question)) return;
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
          {HOST_GATE}
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
      <Problem text={problem} />
    </section>
  );
}

/** The outcome's parts an operator looks for first, then the whole of it. */
function OutcomeView({ outcome }: { outcome: Outcome }) {
  return (
    <div class="outcome-view">
      <dl class="facts">
        <dt>Type</dt>
        <dd>
          <strong>{outcome.type}</strong>
        </dd>
        {outcome.reason && (
          <>
            <dt>Reason</dt>
            <dd>{outcome.reason}</dd>
          </>
        )}
        <dt>Usage</dt>
        <dd>{outcome.usage ? <code>{JSON.stringify(outcome.usage)}</code> : 'not reported'}</dd>
        <dt>Unaccounted</dt>
        <dd>{outcome.unaccounted ? String(outcome.unaccounted) : 'no (usage accounted)'}</dd>
        {outcome.exit_code !== undefined && (
          <>
            <dt>Exit code</dt>
            <dd>{String(outcome.exit_code)}</dd>
          </>
        )}
        {outcome.attempt_id && (
          <>
            <dt>Attempt</dt>
            <dd>{String(outcome.attempt_id)}</dd>
          </>
        )}
      </dl>
      <details>
        <summary>The whole outcome</summary>
        <Json value={outcome} />
      </details>
    </div>
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

/** The mailbox, read only: the admin read never acknowledges, consumes a notice or taints. */
function Messages({ pid }: { pid: string }) {
  const [state, setState] = useState<{ messages: MessageView[]; note?: string } | undefined>();
  const [correlation, setCorrelation] = useState<string | undefined>();
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
  const shown = (state?.messages ?? []).filter((m) => !correlation || m.correlation_id === correlation);
  const ids = new Set(shown.map((m) => m.message_id));
  /** A reply's original: its row here (focused), or the page of the process whose mailbox holds it. */
  const replyLink = (id: string) =>
    ids.has(id) ? (
      <button type="button" class="link" onClick={() => focusRow(`m-${id}`)}>
        {id}
      </button>
    ) : (
      <span>{id}</span>
    );
  return (
    <section aria-labelledby="messages-title">
      <h2 id="messages-title">
        Mailbox{' '}
        <button type="button" class="small" onClick={load}>
          Refresh
        </button>
      </h2>
      <p class="note">
        Read only: nothing here acknowledges a message. {state?.note}
        {correlation && (
          <>
            {' '}
            Showing correlation <code>{correlation}</code>{' '}
            <button type="button" class="small" onClick={() => setCorrelation(undefined)}>
              Show all
            </button>
          </>
        )}
      </p>
      {shown.length > 0 && (
        <DataTable
          class="messages"
          rows={shown}
          rowKey={(m) => m.message_id}
          rowProps={(m) => ({ id: `m-${m.message_id}`, tabIndex: '-1', 'data-acked': String(m.acked) })}
          columns={[
            { title: 'id', cell: (m) => m.message_id },
            { title: 'channel', cell: (m) => m.channel ?? '' },
            { title: 'kind', cell: (m) => m.kind },
            { title: 'sender', cell: (m) => <a href={`#/p/${m.sender}`}>{m.sender}</a> },
            {
              title: 'correlation',
              cell: (m) =>
                m.correlation_id ? (
                  <button
                    type="button"
                    class="link"
                    aria-label={`Show only correlation ${m.correlation_id}`}
                    onClick={() => setCorrelation(m.correlation_id ?? undefined)}
                  >
                    {m.correlation_id}
                  </button>
                ) : (
                  ''
                ),
            },
            { title: 'reply to', cell: (m) => (m.reply_to ? replyLink(m.reply_to) : '') },
            { title: 'acked', cell: (m) => (m.acked ? `yes ${time(m.acked_at)}` : 'no') },
            {
              title: 'content',
              cell: (m) => <code>{(m.body ?? JSON.stringify(m.payload ?? null)).slice(0, 200)}</code>,
            },
          ]}
        />
      )}
    </section>
  );
}

/** Scrolls to a row of this page and focuses it (hash links would change the page's route). */
function focusRow(id: string) {
  const row = document.getElementById(id);
  row?.scrollIntoView({ block: 'center' });
  row?.focus();
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
        <DataTable
          class="objects"
          rows={objects}
          rowKey={(o) => o.oid}
          columns={[
            { title: 'oid', cell: (o) => o.oid },
            { title: 'kind', cell: (o) => o.kind ?? '' },
            { title: 'owner', cell: (o) => o.owner ?? 'released' },
            { title: 'handle', cell: (o) => o.handle ?? (o.owned ? 'owner' : '') },
            { title: 'version', cell: (o) => o.version ?? '' },
            { title: 'bytes', cell: (o) => o.size_bytes },
            { title: 'labels', cell: (o) => o.labels.join(', ') },
          ]}
        />
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
