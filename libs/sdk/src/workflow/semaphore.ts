import { onAbort } from '../client/abort-listener.js';
import { abortReason } from './cancellation.js';

/** A FIFO counting semaphore whose waiters can be cancelled (a cancelled waiter never takes a slot). */
export class Semaphore {
  #free: number;
  readonly #waiters: Array<() => void> = [];

  constructor(slots: number) {
    this.#free = slots;
  }

  acquire(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (this.#free > 0) {
      this.#free -= 1;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const grant = () => {
        stopListening();
        resolve();
      };
      this.#waiters.push(grant);
      const stopListening = onAbort(signal, () => {
        const i = this.#waiters.indexOf(grant);
        if (i !== -1) this.#waiters.splice(i, 1);
        reject(abortReason(signal as AbortSignal));
      });
    });
  }

  release(): void {
    const next = this.#waiters.shift();
    if (next) next();
    else this.#free += 1;
  }
}
