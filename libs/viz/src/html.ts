import { deriveEdges, elapsedMs, outcomeText, stepsOf, tokensOf } from './derive.js';
import type { JournalEntry } from './journal.js';

// The standalone page: inline CSS and SVG, no external assets, light and dark by the reader's
// preference. Everything taken from the journal is HTML-escaped.

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ESCAPES[ch] ?? ch);
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

const STYLE = `
:root{color-scheme:light dark;--paper:#fafaf7;--ink:#23272e;--soft:#5a6069;--line:#dddcd4;--card:#f1f0ea;--ok:#1c8a5b;--spend:#a96f24;--bad:#b04a3e;--accent:#2f5fa8}
@media (prefers-color-scheme:dark){:root{--paper:#14161a;--ink:#d8dce2;--soft:#99a1ac;--line:#2c3038;--card:#1b1e24;--ok:#3fbf8a;--spend:#d9a05b;--bad:#d97d6f;--accent:#7ca5de}}
*{box-sizing:border-box}
body{margin:0;color:var(--ink);background:var(--paper);font:15px/1.55 system-ui,-apple-system,"Segoe UI",sans-serif}
.wrap{max-width:64rem;margin:0 auto;padding:2rem 1.25rem 3rem}
h1{font:700 1.2rem/1.3 ui-monospace,Menlo,Consolas,monospace;margin:0 0 .3rem;overflow-wrap:anywhere}
.dek{color:var(--soft);margin:0 0 1.3rem;max-width:75ch}
.grid{display:grid;grid-template-columns:minmax(0,1fr);gap:1.3rem}
@media (min-width:880px){.grid{grid-template-columns:minmax(0,3fr) minmax(0,2fr)}}
.panel{border:1px solid var(--line);border-radius:10px;background:var(--card);padding:1rem 1.1rem;min-width:0}
.panel h2{font-size:.78rem;font-weight:700;letter-spacing:.1em;text-transform:uppercase;color:var(--soft);margin:0 0 .8rem}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:13px}
th{text-align:left;color:var(--soft);font-weight:600;padding:4px 10px 6px 0;border-bottom:1px solid var(--line)}
td{padding:7px 10px 7px 0;border-bottom:1px solid var(--line);vertical-align:middle}
tbody tr:last-child td{border-bottom:none}
.num{font-variant-numeric:tabular-nums;text-align:right;color:var(--soft)}
.lbl{font:12px ui-monospace,Menlo,Consolas,monospace;white-space:nowrap}
.pill{display:inline-block;font-weight:600;font-size:10.5px;letter-spacing:.04em;padding:2px 8px;border-radius:999px;border:1px solid;white-space:nowrap}
.pill.ok{color:var(--ok);border-color:var(--ok)}
.pill.bad{color:var(--bad);border-color:var(--bad)}
.barcell{width:32%;min-width:120px}
.bar{display:flex;align-items:center;gap:8px}
.track{flex:1;height:10px;position:relative}
.fill{position:absolute;inset:0 auto 0 0;border-radius:0 4px 4px 0;background:var(--spend)}
.val{font-variant-numeric:tabular-nums;font-size:12px;color:var(--soft);white-space:nowrap}
svg{max-width:100%;height:auto;display:block}
details{border-bottom:1px solid var(--line);padding:6px 0}
details:last-child{border-bottom:none}
summary{cursor:pointer;display:flex;gap:10px;align-items:center}
.out{white-space:pre-wrap;overflow-wrap:anywhere;font-size:13.5px;line-height:1.6;padding:10px 4px 8px 22px;max-width:80ch}
`;

const ROW_HEIGHT = 40;

export interface RenderOptions {
  /** Adds a 2 s meta refresh, for `--watch`. */
  watch?: boolean;
}

/** The whole page for a journal's entries (file order; every generation; one row per entry). */
export function renderJournalHtml(
  entries: readonly JournalEntry[],
  path: string,
  options: RenderOptions = {},
): string {
  const edges = deriveEdges(entries);
  const maxTokens = entries.reduce((max, entry) => Math.max(max, tokensOf(entry.outcome)), 1);
  const title = escapeHtml(path);
  return [
    '<!doctype html><html lang="en"><head><meta charset="utf-8">',
    options.watch === true ? '<meta http-equiv="refresh" content="2">' : '',
    '<meta name="viewport" content="width=device-width,initial-scale=1">',
    `<title>journal: ${title}</title><style>${STYLE}</style></head><body><div class="wrap">`,
    `<h1>${title}</h1>`,
    `<p class="dek"><span class="counts">${entries.length} recorded attempt(s) · ${edges.length} dataflow edge(s)</span>`,
    ' derived from content. A journal records live outcomes only: repeated labels are re-attempts',
    ' or later generations; replays are served, never appended.</p>',
    '<div class="grid">',
    `<section class="panel"><h2>Ledger</h2><div class="scroll">${ledger(entries, maxTokens)}</div></section>`,
    `<section class="panel"><h2>Derived dataflow</h2><div class="scroll">${graph(entries, edges)}</div></section>`,
    '</div>',
    `<section class="panel outputs" style="margin-top:1.3rem"><h2>Outputs</h2>${outputs(entries)}</section>`,
    '</div></body></html>\n',
  ].join('');
}

function pill(entry: JournalEntry): string {
  return entry.outcome.type === 'Finished'
    ? '<span class="pill ok">Finished</span>'
    : '<span class="pill bad">DidNotFinish</span>';
}

function ledger(entries: readonly JournalEntry[], maxTokens: number): string {
  const rows = entries.map((entry, index) => {
    const tokens = tokensOf(entry.outcome);
    const width = Math.max(Math.floor((100 * tokens) / maxTokens), tokens > 0 ? 2 : 0);
    const detail = escapeHtml(Array.from(outcomeText(entry.outcome)).slice(0, 180).join(''));
    return [
      `<tr class="entry" data-outcome="${entry.outcome.type}" title="${detail}">`,
      `<td class="num">${index + 1}</td>`,
      `<td class="lbl">${escapeHtml(entry.call.label)}</td>`,
      `<td class="lbl">${escapeHtml(entry.phase ?? '')}</td>`,
      `<td>${pill(entry)}</td>`,
      `<td class="num">${stepsOf(entry.outcome)}</td>`,
      `<td class="num">${elapsedMs(entry) ?? ''}</td>`,
      `<td class="barcell"><div class="bar"><div class="track"><div class="fill" style="width:${width}%"></div></div>`,
      `<span class="val">${tokens}</span></div></td></tr>`,
    ].join('');
  });
  return [
    '<table class="ledger"><thead><tr><th>#</th><th>agent</th><th>phase</th><th>outcome</th>',
    '<th class="num">steps</th><th class="num">ms</th><th>tokens</th></tr></thead>',
    `<tbody>${rows.join('\n')}</tbody></table>`,
  ].join('');
}

function graph(entries: readonly JournalEntry[], edges: ReturnType<typeof deriveEdges>): string {
  const height = entries.length * ROW_HEIGHT + 16;
  const y = (index: number) => 22 + index * ROW_HEIGHT;
  const parts = [
    `<svg class="dataflow" viewBox="0 0 460 ${height}" role="img"`,
    ` aria-label="Derived dataflow: an edge means a later agent's input embeds an earlier agent's output">`,
    '<defs><marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="6.5" markerHeight="6.5" orient="auto">',
    '<path d="M0,0 L8,4 L0,8 z" fill="var(--accent)"/></marker></defs>',
  ];
  for (const { from, to } of edges) {
    const spread = 40 + (to - from) * 26;
    parts.push(
      `<path class="edge" d="M 212 ${y(from)} C ${212 + spread} ${y(from)}, ${212 + spread} ${y(to)}, 218 ${y(to)}"`,
      ' fill="none" stroke="var(--accent)" stroke-width="1.4" opacity="0.8" marker-end="url(#arrow)"/>',
    );
  }
  entries.forEach((entry, index) => {
    const color = entry.outcome.type === 'Finished' ? 'var(--ok)' : 'var(--bad)';
    parts.push(
      `<circle class="node" cx="200" cy="${y(index)}" r="7" fill="${color}" fill-opacity="0.18" stroke="${color}" stroke-width="1.6"/>`,
      `<text x="188" y="${y(index) + 4}" text-anchor="end" font-size="12" font-family="ui-monospace,Menlo,monospace"`,
      ` fill="var(--ink)">${escapeHtml(entry.call.label)}</text>`,
    );
  });
  parts.push('</svg>');
  return parts.join('');
}

function outputs(entries: readonly JournalEntry[]): string {
  return entries
    .map((entry, index) => {
      // The newest entry is the one a watcher is waiting on: open it.
      const open = index === entries.length - 1 ? ' open' : '';
      return [
        `<details${open}><summary><span class="num">${index + 1}</span>`,
        `<span class="lbl">${escapeHtml(entry.call.label)}</span>${pill(entry)}</summary>`,
        // `.out` is pre-wrap: no stray whitespace inside it.
        `<div class="out">${escapeHtml(outcomeText(entry.outcome))}</div></details>`,
      ].join('');
    })
    .join('\n');
}
