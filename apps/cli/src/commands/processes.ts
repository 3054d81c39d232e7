import {
  budgetRequestSchema,
  jsonValueSchema,
  type ListProcessesInput,
  type ProcessStatus,
  type ProcessView,
  pidSchema,
  processStatusSchema,
  rootOf,
  signalSchema,
} from '@libos/protocol';
import type { AdminClient } from '@libos/sdk';
import type { Command } from 'commander';
import type { z } from 'zod';
import { adminClient, type GlobalOptions } from '../context.js';
import { CliError, parseChoice } from '../errors.js';
import { emit, paintStatus } from '../output.js';
import { describeText } from './describe.js';
import { outcomeText, processTable, processTree } from './ps.js';

/** A pid argument, refused in one line when it is not one. */
function parsePid(what: string, text: string): string {
  if (!pidSchema.safeParse(text).success)
    throw new CliError(`${what}: ${text} is not a pid (e.g. p4k9x2m7q or p4k9x2m7q.12)`);
  return text;
}

/** Every process the filters select, newest first, following cursors. */
export async function allProcesses(
  admin: AdminClient,
  status?: ProcessStatus,
  filters: Omit<ListProcessesInput, 'status' | 'cursor' | 'limit'> = {},
): Promise<ProcessView[]> {
  const all: ProcessView[] = [];
  let cursor: string | undefined;
  do {
    const page = await admin.listProcesses({
      limit: 1000,
      ...filters,
      ...(status ? { status } : {}),
      ...(cursor ? { cursor } : {}),
    });
    all.push(...page.processes);
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  return all;
}

function parseJsonOption<S extends z.ZodType>(
  what: string,
  schema: S,
  text: string | undefined,
  example: string,
): z.infer<S> | undefined {
  if (text === undefined) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    const why = error instanceof Error ? ` (${error.message})` : '';
    throw new CliError(`${what} must be JSON${why}, e.g. '${example}'`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success)
    throw new CliError(
      `${what}: ${parsed.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ')}`,
    );
  return parsed.data;
}

export function registerProcessCommands(program: Command): void {
  program
    .command('run')
    .description('launch a root process on an image, wait for it, print its outcome and result')
    .argument('<image>', 'image name')
    .requiredOption('-g, --goal <goal>', 'the goal')
    .option('-i, --input <json>', 'input (JSON)')
    .option('-b, --budget <json>', 'resource budget (JSON), e.g. {"wall_ms":60000}')
    .option('--no-wait', 'print the pid and return')
    .action(async (image: string, opts: { goal: string; input?: string; budget?: string; wait: boolean }) => {
      const global = program.opts<GlobalOptions>();
      const input = parseJsonOption('--input', jsonValueSchema, opts.input, '{"query":"…"}');
      const budget = parseJsonOption('--budget', budgetRequestSchema, opts.budget, '{"wall_ms":60000}');
      const admin = await adminClient(global);
      const root = await admin.createProcess({
        goal: opts.goal,
        image,
        launch: true,
        ...(input === undefined ? {} : { input }),
        ...(budget === undefined ? {} : { resource_budget: budget }),
      });
      if (!opts.wait) return emit(global.json, root, () => root.pid);
      const done = await admin.waitProcess(root.pid);
      const result = done.result_oid ? (await admin.readObject(done.result_oid)).payload : null;
      emit(global.json, { ...done, result }, () =>
        [
          `${root.pid} ${paintStatus(done.status)} ${outcomeText(done)}`,
          ...(done.result_oid ? [JSON.stringify(result, null, 2)] : []),
        ].join('\n'),
      );
      if (done.status !== 'exited') process.exitCode = 1;
    });

  program
    .command('ps')
    .description('list processes, newest first (a tree: siblings in spawn order)')
    .option('-s, --status <status>', 'only this status')
    .option('-r, --root <pid>', "only this root's tree")
    .option('-p, --parent <pid>', 'only the direct children of this process')
    .option('-i, --image <name>', 'only processes of this image')
    .option('--roots', 'only root processes')
    .option('-t, --tree', 'as trees, with outcomes and budgets')
    .action(
      async (opts: {
        status?: string;
        tree?: boolean;
        root?: string;
        parent?: string;
        image?: string;
        roots?: boolean;
      }) => {
        const global = program.opts<GlobalOptions>();
        const status =
          opts.status === undefined ? undefined : parseChoice('status', processStatusSchema, opts.status);
        const root = opts.root === undefined ? undefined : parsePid('--root', opts.root);
        if (root?.includes('.'))
          throw new CliError(
            `--root ${root} is not a root pid: use --parent ${root}, or its root ${rootOf(root)}`,
          );
        const parent = opts.parent === undefined ? undefined : parsePid('--parent', opts.parent);
        const processes = await allProcesses(await adminClient(global), status, {
          ...(root ? { root } : {}),
          ...(parent ? { parent } : {}),
          ...(opts.image ? { image: opts.image } : {}),
          ...(opts.roots ? { roots: 'true' as const } : {}),
        });
        emit(global.json, processes, () =>
          opts.tree ? processTree(processes, { budgets: true }) : processTable(processes),
        );
      },
    );

  program
    .command('describe')
    .description('everything about one process: goal, attempts, budget, capabilities, outcome, result, mail')
    .argument('<pid>')
    .action(async (pid: string) => {
      const global = program.opts<GlobalOptions>();
      const described = await (await adminClient(global)).describeProcess(parsePid('pid', pid));
      emit(global.json, described, () => describeText(described));
    });

  program
    .command('wait')
    .description('block until a process is terminal; print its outcome')
    .argument('<pid>')
    .action(async (pid: string) => {
      const global = program.opts<GlobalOptions>();
      const done = await (await adminClient(global)).waitProcess(pid);
      emit(global.json, done, () => `${pid} ${paintStatus(done.status)} ${outcomeText(done)}`);
      if (done.status !== 'exited') process.exitCode = 1;
    });

  program
    .command('signal')
    .description('pause, resume, cancel or terminate a process (as the operator)')
    .argument('<pid>')
    .argument('<signal>', 'pause | resume | cancel | terminate')
    .option('-r, --reason <reason>')
    .action(async (pid: string, signal: string, opts: { reason?: string }) => {
      const global = program.opts<GlobalOptions>();
      const chosen = parseChoice('signal', signalSchema, signal);
      const view = await (await adminClient(global)).signalProcess(pid, chosen, opts.reason);
      emit(
        global.json,
        view,
        () => `${pid} ${paintStatus(view.status)} (generation ${view.state_generation})`,
      );
    });
}
