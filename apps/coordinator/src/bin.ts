import { loadCoordinatorConfig } from './config.js';
import { startCoordinator } from './start.js';

const coordinator = await startCoordinator(loadCoordinatorConfig());
// Its Redis connection ended for good: exit as after a crash, so a supervisor starts a fresh one.
void coordinator.lost.then(() => process.exit(1));
const stop = () => void coordinator.close().then(() => process.exit(0));
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
