// The example workflow as a program. The same workflow, two runners:
//   --local    every agent is a child process of this program (contractRunner)
//   --cluster  every agent is a child process on a libos cluster (clusterRunner): started with
//              `npx libos up`, or this program runs inside a launched child (LIBOS_* env)
// Prints `{runner, results, stats}` as JSON on stdout; progress goes to stderr.
// node --import tsx --conditions=@libos/source examples/src/workflows/run-answers.ts --local
import { parseArgs } from 'node:util';
import { fileJournal, type Runner, Workflow, type WorkflowEvent } from '@libos/sdk';
import { answersWorkflow } from './answers.js';
import { type ClusterTarget, clusterTarget, localRunner } from './runners.js';

const USAGE = `usage: run-answers (--local | --cluster [--url URL]) [--journal FILE] [--work-ms N] [--concurrency N]
  --journal FILE   record live outcomes; run again after a crash and finished work replays
  --work-ms N      how long each agent "thinks" (default 100)
  --concurrency N  agents at once (default 8)`;

const { values } = parseArgs({
  options: {
    local: { type: 'boolean', default: false },
    cluster: { type: 'boolean', default: false },
    url: { type: 'string' },
    journal: { type: 'string' },
    'work-ms': { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '8' },
    help: { type: 'boolean', default: false },
  },
});
const workMs = Number(values['work-ms']);
const concurrency = Number(values.concurrency);
if (values.help || values.local === values.cluster || !(workMs >= 0) || !(concurrency >= 1)) {
  process.stderr.write(`${USAGE}\n`);
  process.exit(values.help ? 0 : 2);
}

function describe(event: WorkflowEvent): string {
  switch (event.type) {
    case 'PhaseStarted':
      return `phase ${event.title}`;
    case 'Log':
      return event.message;
    case 'AgentStarted':
      return `started   ${event.label}`;
    case 'AgentFinished':
      return `finished  ${event.label}: ${event.disposition}`;
    case 'AgentReplayed':
      return `replayed  ${event.label}: ${event.disposition}`;
  }
}

const cancel = new AbortController();
process.once('SIGINT', () => cancel.abort(new Error('interrupted (SIGINT)')));

const target: ClusterTarget | undefined = values.cluster
  ? await clusterTarget(values.url === undefined ? {} : { url: values.url })
  : undefined;
const runner: Runner = target?.runner ?? localRunner();
if (target) process.stderr.write(`on the cluster as ${target.pid}\n`);
const wf = new Workflow({
  runner,
  maxConcurrent: concurrency,
  onEvent: (event) => process.stderr.write(`${describe(event)}\n`),
  ...(values.journal !== undefined && { journal: await fileJournal(values.journal) }),
});

try {
  const results = await answersWorkflow(wf, { workMs, signal: cancel.signal });
  const stats = {
    calls_made: wf.callsMade(),
    calls_replayed: wf.callsReplayed(),
    tokens_spent: wf.tokensSpent(),
  };
  if (target?.ownsRoot) await target.process.exit({ payload: results });
  process.stdout.write(
    `${JSON.stringify({ runner: target ? 'cluster' : 'local', results, stats }, null, 2)}\n`,
  );
} catch (error) {
  const message = error instanceof Error ? error.message : String(error);
  if (target?.ownsRoot) await target.process.exit({ failed: true, reason: message }).catch(() => undefined);
  process.stderr.write(`the workflow failed: ${message}\n`);
  process.exitCode = 1;
}
