import type { BudgetView, DescribeResult, MessageView } from '@libos/protocol';
import { paint, paintStatus, table } from '../output.js';
import { ago, outcomeText } from './ps.js';

/** `limit/used/reserved/remaining` per budget dimension, as a table. */
function budgetTable(budget: BudgetView): string {
  return table(
    ['DIMENSION', 'LIMIT', 'USED', 'RESERVED', 'REMAINING'],
    Object.entries(budget).map(([dim, view]) => [
      dim,
      view.limit === null ? '∞' : String(view.limit),
      String(view.used),
      String(view.reserved),
      view.remaining === null ? '∞' : String(view.remaining),
    ]),
  );
}

function messageLine(m: MessageView): string {
  const tags = [m.kind === 'interrupt' ? paint('red', 'interrupt') : '', m.channel ? `#${m.channel}` : '']
    .filter(Boolean)
    .join(' ');
  const text = m.body ?? JSON.stringify(m.payload);
  return `  ${m.message_id} from ${m.sender} ${tags} ${text.length > 80 ? `${text.slice(0, 79)}…` : text}`.trimEnd();
}

const when = (iso: string | null) => (iso ? `${iso} (${ago(iso)} ago)` : '-');

/** `libos describe PID`: everything about one process, in sections. */
export function describeText(d: DescribeResult): string {
  const p = d.process;
  const lines: string[] = [];
  const field = (name: string, value: string) =>
    lines.push(`${paint('bold', `${name}:`.padEnd(14))}${value}`);
  field('pid', p.pid);
  field('status', `${paintStatus(p.status)}${p.pause_reason ? ` (${p.pause_reason})` : ''}`);
  if (p.resume_gate)
    field('resume gate', 'host: only an operator resume (`libos signal PID resume`) continues it');
  if (p.pending_signal)
    field(
      'pending',
      `${p.pending_signal.signal}${p.pending_signal.reason ? `: ${p.pending_signal.reason}` : ''}`,
    );
  field('goal', p.goal);
  field('image', p.image ?? '-');
  field('cwd', p.cwd);
  field('parent', p.parent_pid ?? '- (a root)');
  field('driver', `${p.driver}, ${p.mode}`);
  field('created', when(p.created_at));
  field('started', when(p.started_at));
  field('ended', when(d.ended_at));
  if (p.wait_state) {
    const ws = p.wait_state;
    field(
      'waiting on',
      ws.type === 'child'
        ? `child ${ws.child_pid} since ${ws.since}`
        : ws.type === 'children'
          ? `${ws.mode} of ${ws.child_pids.length} children (${ws.child_pids.join(', ')}) since ${ws.since}`
          : `a message since ${ws.since}`,
    );
  }
  if (p.outcome) {
    const usage = p.outcome.usage;
    field('outcome', outcomeText(p));
    if (usage)
      field(
        'usage',
        `${usage.prompt_tokens}+${usage.completion_tokens} tokens, ${usage.steps} steps, ${usage.wall_ms} ms${usage.cost_usd === undefined ? '' : `, $${usage.cost_usd}`}`,
      );
    if (p.outcome.unaccounted) field('unaccounted', p.outcome.unaccounted);
  }
  field(
    'children',
    `${d.children.total}${
      d.children.total
        ? ` (${Object.entries(d.children.by_status)
            .map(([s, n]) => `${n} ${s}`)
            .join(', ')})`
        : ''
    }`,
  );
  lines.push('', paint('bold', 'budget'), budgetTable(p.resource_budget));
  lines.push('', paint('bold', 'capabilities'));
  if (p.capabilities.length === 0) lines.push('  none');
  for (const cap of p.capabilities) {
    const extra = [cap.delegable ? 'delegable' : '', cap.expires_at ? `expires ${cap.expires_at}` : '']
      .filter(Boolean)
      .join(', ');
    lines.push(`  ${cap.resource} [${cap.rights.join(', ')}]${extra ? ` ${extra}` : ''}`);
  }
  lines.push('', paint('bold', 'attempts'));
  if (d.attempts.length === 0)
    lines.push(`  none recorded${p.driver === 'caller' ? ' (caller-driven)' : ''}`);
  else
    lines.push(
      table(
        ['ATTEMPT', 'WORKER', 'CLAIMED', 'ENDED', 'AS'],
        d.attempts.map((a) => [
          String(a.attempt),
          a.worker,
          a.claimed_at,
          a.ended_at ?? '-',
          a.ended_as ? `${a.ended_as}${a.reason ? `: ${a.reason}` : ''}` : '-',
        ]),
      ),
    );
  lines.push('', paint('bold', 'result'));
  if (!d.result) lines.push(p.result_oid ? `  ${p.result_oid} (released)` : '  none');
  else
    lines.push(
      `  ${d.result.oid} (${d.result.size_bytes} bytes${d.result.truncated ? ', preview cut: `libos --json describe` has the oid to read' : ''})`,
      `  ${d.result.preview}${d.result.truncated ? '…' : ''}`,
    );
  const mail = d.mailbox;
  lines.push(
    '',
    paint('bold', 'mailbox'),
    `  ${mail.unacked_count} unread, ${mail.acked_count} acknowledged; notices not yet delivered: ${mail.pending_notices.interrupt} interrupt, ${mail.pending_notices.normal} normal`,
    ...mail.first_unread.map(messageLine),
  );
  return lines.join('\n');
}
