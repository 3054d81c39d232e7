#!/usr/bin/env node
// One hosted launch as a libos child (the bridge named by the `WORKFLOW_HOST` a libos worker
// gives its children, see handoff.ts): a contract child that, acting as the process whose
// LIBOS_URL, LIBOS_PID and LIBOS_TOKEN it inherits (the workflow's own), spawns a child on the
// image its request's `kind` names, waits for it and answers with its result. So a hosted
// workflow's agents are libos children of the process that runs the workflow.
//   node libs/sdk/dist/hosted-child.js --result-file {result_file}
import { runChild } from '@libos/contract';
import { hostedLaunch } from './workflow/hosted-launch.js';

const say = (line: string) => process.stderr.write(`hosted child: ${line}\n`);
const code = await runChild((request, ctx) => hostedLaunch(request, ctx.signal, say), {
  argv: process.argv.slice(2),
  stdin: process.stdin,
  stderr: process.stderr,
  name: 'hosted child',
});
process.exit(code);
