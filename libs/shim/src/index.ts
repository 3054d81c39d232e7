export {
  type ClaudeReport,
  ClaudeStream,
  claudeArgs,
  claudeDialect,
  claudeEnding,
  claudeTokens,
} from './dialects/claude.js';
export { type CodexReport, CodexStream, codexArgs, codexDialect, codexEnding } from './dialects/codex.js';
export { DIALECTS, type DialectName, isDialectName, runShim, shimMain } from './main.js';
export { type ParsedOptions, parseShimOptions, type ShimOptions, shimHelp } from './options.js';
export { PROMPT_PROBLEM, parseShimRequest, promptOf, type ShimRequest } from './request.js';
export {
  type CliEnding,
  EXIT_WAIT_MS,
  type RunCliOptions,
  runCli,
  STOP_GRACE_MS,
  type Verdict,
} from './run-cli.js';
export {
  EXIT_NO_RESULT,
  EXIT_RESULT_WRITTEN,
  EXIT_USAGE,
  type ShimContext,
  type ShimDialect,
  type ShimIo,
  serveShim,
} from './serve.js';
export { addTokens, type Tokens, toUsage, ZERO_TOKENS } from './tokens.js';
