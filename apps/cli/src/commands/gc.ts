import type { DeleteProcessResult } from '@libos/protocol';
import type { Command } from 'commander';
import { adminClient, type GlobalOptions } from '../context.js';
import { emit } from '../output.js';

/** `libos gc`: a retention sweep now; `libos gc PID…`: delete those terminal trees now. */
export function registerGcCommands(program: Command): void {
  program
    .command('gc')
    .description(
      'run a retention sweep now (delete what is past retention); with pids, delete those terminal processes and their subtrees now',
    )
    .argument('[pids...]')
    .action(async (pids: string[]) => {
      const global = program.opts<GlobalOptions>();
      const admin = await adminClient(global);
      if (pids.length === 0) {
        const report = await admin.gc();
        emit(global.json, report, () => `deleted ${report.deleted} processes in ${report.trees} trees`);
        return;
      }
      const results: DeleteProcessResult[] = [];
      for (const pid of pids) results.push(await admin.deleteProcess(pid));
      emit(global.json, results, () =>
        results.map((r) => `${r.pid}: deleted ${r.deleted} processes`).join('\n'),
      );
    });
}
