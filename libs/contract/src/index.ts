export { writeResultAtomic } from './atomic-write.js';
export { type ChildArgv, parseChildArgv } from './child-argv.js';
export { namesResultFile, RESULT_FILE_PLACEHOLDER } from './placeholder.js';
export {
  type ContractRequest,
  contractRequestSchema,
  encodeRequestLine,
  type ParsedRequest,
  parseRequestLine,
  type RequestFields,
} from './request.js';
export { type RequestChannel, readRequestLine } from './request-line.js';
export {
  type ChildEnding,
  childEndingSchema,
  type DecodedResult,
  type DecodeOutcome,
  decodeResultFile,
  type ResultStatus,
  resultDocument,
  resultStatusSchema,
} from './result.js';
export {
  type ChildContext,
  type ChildHandler,
  type RunChildOptions,
  runChild,
  type ServeChildOptions,
  serveChild,
} from './serve-child.js';
export {
  type ContractRunResult,
  classifyLaunch,
  contractRunResultSchema,
  type LaunchEvidence,
  type ResultFileEvidence,
  TEXTS,
  type Terminal,
  type TerminalType,
  terminalSchema,
  terminalTypeSchema,
  UNACCOUNTED,
} from './terminal.js';
export { stepsSchema, type Usage, usageDocument, usageSchema } from './usage.js';
