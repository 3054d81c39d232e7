export {
  answerText,
  deriveEdges,
  type Edge,
  elapsedMs,
  failureText,
  outcomeText,
  stepsOf,
  tokensOf,
} from './derive.js';
export { escapeHtml, type RenderOptions, renderJournalHtml } from './html.js';
export {
  type AgentAttempt,
  type AgentFailure,
  type AgentOutcome,
  entrySchema,
  type JournalEntry,
  parseJournal,
  readJournalFile,
} from './journal.js';
export { parseVizArgs, USAGE, type VizOptions, vizMain, WATCH_INTERVAL_MS } from './main.js';
