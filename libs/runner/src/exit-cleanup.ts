// Synchronous cleanups for launches still in flight when this process exits normally (or by
// process.exit): a detached child group is not killed with its parent, and an in-flight
// launch's directory would otherwise stay in the temp dir. A crash (SIGKILL) skips them.
const pending = new Set<() => void>();
let installed = false;

/** Registers `cleanup` to run if the process exits first; call the returned function to drop it. */
export function atExit(cleanup: () => void): () => void {
  if (!installed) {
    installed = true;
    process.once('exit', () => {
      for (const run of pending) {
        try {
          run();
        } catch {
          // best effort: the process is exiting
        }
      }
    });
  }
  pending.add(cleanup);
  return () => pending.delete(cleanup);
}
