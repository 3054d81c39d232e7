export {
  type ClaudeReport,
  ClaudeStream,
  claudeAllowedTools,
  claudeArgs,
  claudeDialect,
  claudeEnding,
  claudeMcpConfig,
  claudeTokens,
  mcpFailureText,
} from './dialects/claude.js';
export {
  CODEX_TOOL_TIMEOUT_SEC,
  type CodexReport,
  CodexStream,
  codexArgs,
  codexDialect,
  codexEnding,
  codexMcpSettings,
} from './dialects/codex.js';
export {
  cliEnv,
  LIBOS_ENV,
  LIBOS_SERVER,
  type LibosMcp,
  libosMcpAllowed,
  libosMcpEntry,
  libosMcpFor,
} from './libos-mcp.js';
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
export { schemaProblem } from './schema-check.js';
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
