import { type AgentFailure, failureText } from './types.js';

/** The typed error channel of the workflow layer: what `attempt` folds and `retry` may retry. */
export class WorkflowError extends Error {
  override name = 'WorkflowError';
}

export class AgentFailed extends WorkflowError {
  override name = 'AgentFailed';
  constructor(
    readonly label: string,
    readonly failure: AgentFailure,
  ) {
    super(`agent '${label}' ${failureText(failure)}`);
  }
}

export class CallBudgetExhausted extends WorkflowError {
  override name = 'CallBudgetExhausted';
  constructor(readonly label: string) {
    super(`launch allowance exhausted before agent '${label}' could launch`);
  }
}

export class QuorumNotReached extends WorkflowError {
  override name = 'QuorumNotReached';
  constructor(
    readonly need: number,
    readonly ok: number,
    readonly of: number,
  ) {
    super(`quorum not reached: ${ok} of ${of} succeeded, ${need} required`);
  }
}

/** A journal line other than a torn tail does not decode: resuming would silently lose work. */
export class JournalCorrupted extends Error {
  override name = 'JournalCorrupted';
  constructor(
    readonly path: string,
    readonly line: number,
    options?: { cause?: unknown },
  ) {
    super(`journal ${path} is corrupt at line ${line}`, options);
  }
}
