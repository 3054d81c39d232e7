import { describe, expect, it } from 'vitest';
import { refusal, root, useKernel } from './helpers.js';

const env = useKernel();
const k = () => env.kernel;

describe('a caller that presents its token', () => {
  it('is checked by every script it runs: a forged or dead token is refused and changes nothing', async () => {
    const me = await root(env);
    const caller = k().callerOf(me.token!);
    expect((await k().tools.get_process(caller, {})).pid).toBe(me.pid);

    const forged = k().callerOf(`${me.pid}.${'A'.repeat(43)}`);
    const before = await k().admin.getProcess(me.pid);
    for (const call of [
      k().tools.get_process(forged, {}),
      k().tools.send_process_message(forged, { to: 'self', body: 'x' }),
      k().tools.spawn_child_process(forged, { goal: 'c' }),
      k().tools.process_exit(forged, {}),
    ]) {
      expect(await refusal(call)).toMatchObject({
        code: 'unauthenticated',
        details: { reason: 'invalid_token' },
      });
    }
    expect((await k().admin.getProcess(me.pid)).state_generation).toBe(before.state_generation);

    await k().tools.process_exit(caller, {});
    for (const call of [
      k().tools.get_process(caller, {}),
      k().tools.read_process_messages(caller, {}),
      k().tools.create_object(caller, { payload: 1 }),
    ]) {
      expect(await refusal(call)).toMatchObject({
        code: 'unauthenticated',
        details: { reason: 'terminal_caller' },
      });
    }
    // authenticate (the first sight of a token) says the same without running a tool.
    expect(await refusal(k().authenticate(me.token!))).toMatchObject({ code: 'unauthenticated' });
  });

  it('learns the notices due to it as its call began, not those its call caused', async () => {
    const me = await root(env);
    const caller = k().callerOf(me.token!);
    await k().tools.send_process_message(caller, { to: 'self', body: 'fyi' });
    expect(caller.proof.noticesDue).toEqual({ interrupt: false, normal: false });
    await k().tools.get_process(caller, {});
    expect(caller.proof.noticesDue).toEqual({ interrupt: false, normal: true });
    await k().tools.send_process_message(caller, { to: 'self', kind: 'interrupt', body: 'stop' });
    await k().tools.get_process(caller, {});
    expect(caller.proof.noticesDue).toEqual({ interrupt: true, normal: true });
    // A caller without a proof (in-process, trusted) is not checked and learns nothing.
    expect((await k().tools.get_process({ pid: me.pid }, {})).pid).toBe(me.pid);
  });
});
