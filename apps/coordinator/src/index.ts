export { type CoordinatorConfig, coordinatorConfigSchema, loadCoordinatorConfig } from './config.js';
export { Launcher } from './launcher.js';
export { Reaper } from './reaper.js';
export { BOARD_PATH, buildServer, type ServerParts } from './server.js';
export { coordinatorLogger, type RunningCoordinator, startCoordinator } from './start.js';
