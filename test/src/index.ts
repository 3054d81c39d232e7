export {
  asSelf,
  NO_USAGE,
  numberFromRequest,
  READ_REQUEST,
  shImage,
  waitForFile,
  wordFromRequest,
  writeResult,
} from './children.js';
export {
  ADMIN_TOKEN,
  CLI_SOURCE,
  CLUSTER_MARKER,
  Cluster,
  type ClusterOptions,
  WORKER_NAME_VAR,
} from './cluster.js';
export {
  describeProcess,
  isAlive,
  isSourceTooling,
  killAll,
  processesMarked,
  procState,
} from './os-processes.js';
export { eventually, sleep } from './poll.js';
export { bearer, type RawAnswer, rawRequest, refusalOf } from './raw-http.js';
export { type Scratch, scratch, WORKSPACE } from './scratch.js';
