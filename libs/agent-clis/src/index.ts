export {
  CLAUDE_CODE_VERSION,
  CODEX_KEY_VAR,
  CODEX_VERSION,
  claudeBin,
  claudeOfflineEnv,
  codexBin,
  codexOfflineArgs,
  codexOfflineEnv,
} from './clis.js';
export { type DelegateOptions, delegatingModel, jsonIn } from './delegate.js';
export {
  isSideRequest,
  type ModelServer,
  type ModelServerOptions,
  type SeenRequest,
  startModelServer,
} from './model-server.js';
export {
  type Api,
  DEFAULT_USAGE,
  type ModelRequest,
  type ModelUsage,
  type Reply,
  type Turn,
} from './script.js';
