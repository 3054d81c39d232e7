import { loadCoordinatorConfig } from './config.js';
import { startCoordinator } from './start.js';

const coordinator = await startCoordinator(loadCoordinatorConfig());
const stop = () => void coordinator.close().then(() => process.exit(0));
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
