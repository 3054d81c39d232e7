import { processViewSchema, TOOLS } from '@libos/protocol';
import { describe, expect, it } from 'vitest';
import { root, runningChild, USAGE, useKernel } from './helpers.js';

const env = useKernel();
const k = () => env.kernel;

/** Every result parses with the protocol's result schema (what the coordinator serialises). */
function conforms<N extends keyof typeof TOOLS>(name: N, value: unknown): void {
  const parsed = TOOLS[name].result.safeParse(value);
  if (!parsed.success) throw new Error(`${name}: ${parsed.error.message}`);
  expect(parsed.data).toEqual(value);
}

describe('protocol conformance', () => {
  it('returns results and views that match the protocol schemas exactly', async () => {
    const parent = await root(env, { resource_budget: { tokens: 1000, cost_usd: 2 } });
    const p = { pid: parent.pid };
    const spawned = await k().tools.spawn_child_process(p, { goal: 'g', inherited_paths: ['x'] });
    conforms('spawn_child_process', spawned);
    const obj = await k().tools.create_object(p, { payload: { a: [1, []] }, labels: ['x'] });
    conforms('create_object', obj);
    conforms('read_object', await k().tools.read_object(p, { oid: obj.oid }));
    conforms('write_object', await k().tools.write_object(p, { oid: obj.oid, payload: [] }));
    conforms('fork_child_process', await k().tools.fork_child_process(p, { goal: 'f', mode: 'copy' }));
    const child = await runningChild(env, parent.pid);
    const sent = await k().tools.send_process_message(
      { pid: child.pid },
      { to: 'parent', body: 'b', payload: [] },
    );
    conforms('send_process_message', sent);
    conforms('read_process_messages', await k().tools.read_process_messages(p, { limit: 1, ack: false }));
    conforms('receive_process_messages', await k().tools.receive_process_messages(p, { block: false }));
    conforms(
      'wait_child_process',
      await k().tools.wait_child_process(p, { child_pid: child.pid, block: false }),
    );
    conforms(
      'signal_child_process',
      await k().tools.signal_child_process(p, { child_pid: child.pid, signal: 'pause' }),
    );
    await k().tools.signal_child_process(p, { child_pid: child.pid, signal: 'resume' });
    await k().worker.complete(child.pid, 1, child.fence, {
      terminal: { type: 'captured' },
      report: { ok: [] },
      usage: { ...USAGE, cost_usd: 0.5 },
      exit_code: 0,
    });
    const waited = await k().tools.wait_child_process(p, { child_pid: child.pid });
    conforms('wait_child_process', waited);
    expect((await k().tools.read_object(p, { oid: waited.result_oid ?? '' })).payload).toEqual({ ok: [] });
    conforms('merge_child_memory', await k().tools.merge_child_memory(p, { child_pid: child.pid }));
    const listed = await k().tools.list_child_processes(p, {});
    conforms('list_child_processes', listed);
    for (const view of [...listed.children, await k().tools.get_process(p, {})]) {
      expect(processViewSchema.parse(view)).toEqual(view);
    }
    conforms('get_process', await k().tools.get_process(p, { pid: spawned.pid }));
    conforms('process_exit', await k().tools.process_exit(p, { payload: null }));
  });
});
