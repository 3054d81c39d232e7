// `node apps/worker/dist/bin.js`: one worker from the environment (see README), until SIGTERM/SIGINT.
import { loadWorkerConfig, startWorker } from './index.js';

const worker = await startWorker(loadWorkerConfig(process.env));
// Its Redis connection ended for good: exit as after a crash, so a supervisor starts a fresh one.
void worker.lost.then(() => process.exit(1));
let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) {
      // A second signal: stop now; the runner's exit hook kills the children's process groups.
      process.exit(130);
    }
    stopping = true;
    worker.close().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`libos worker: ${String(error)}\n`);
        process.exit(1);
      },
    );
  });
}
