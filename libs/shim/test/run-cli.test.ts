import { describe, expect, it } from 'vitest';
import { runCli, type Verdict } from '../src/index.js';

const node = process.execPath;

/** A Node CLI script; Node starts with default signal dispositions, so its traps are reliable. */
function script(source: string): string[] {
  return ['-e', source];
}

function collect(verdict: (line: string, seen: string[]) => Verdict = () => 'continue') {
  const seen: string[] = [];
  return {
    seen,
    observe: (line: string) => {
      seen.push(line);
      return verdict(line, seen);
    },
  };
}

const processGone = (pid: number) => {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
};

describe('runCli', () => {
  it('closes the CLI stdin at once, observes every line, and reports the exit status', async () => {
    const { seen, observe } = collect();
    const ending = await runCli({
      command: 'sh',
      args: ['-c', 'read line || echo "stdin at eof"; echo one; printf "two\\r\\nthree"; exit 3'],
      observe,
    });
    expect(ending).toEqual({ type: 'exited', code: 3 });
    // CRLF is trimmed; an unterminated last line still counts.
    expect(seen).toEqual(['stdin at eof', 'one', 'two', 'three']);
  });

  it('passes argv directly, without a shell, and honours cwd', async () => {
    const { seen, observe } = collect();
    const ending = await runCli({
      command: node,
      args: script('console.log(process.cwd()); console.log(JSON.stringify(process.argv.slice(1)))').concat([
        '$HOME',
        'a b',
      ]),
      cwd: '/tmp',
      observe,
    });
    expect(ending).toEqual({ type: 'exited', code: 0 });
    expect(seen).toEqual(['/tmp', JSON.stringify(['$HOME', 'a b'])]);
  });

  it('stop: signals the CLI, keeps observing through the grace, and wins over the exit status', async () => {
    const { seen, observe } = collect((_line, all) => (all.length === 2 ? 'stop' : 'continue'));
    const ending = await runCli({
      command: node,
      args: script(`
        process.on('SIGINT', () => { setTimeout(() => { console.log('flushed'); process.exit(0); }, 50); });
        console.log('first'); console.log('second');
        setInterval(() => {}, 1000);`),
      stopGraceMs: 2000,
      observe,
    });
    expect(ending).toEqual({ type: 'stopped' });
    expect(seen).toEqual(['first', 'second', 'flushed']);
  });

  it('kills a CLI that ignores the stop signal once the grace is over', async () => {
    let pid = 0;
    const started = Date.now();
    const ending = await runCli({
      command: node,
      args: script(
        `process.on('SIGINT', () => console.log('ignored')); console.log(process.pid); setInterval(() => {}, 1000);`,
      ),
      stopGraceMs: 300,
      observe: (line) => {
        if (pid === 0) pid = Number(line);
        return 'stop';
      },
    });
    const elapsed = Date.now() - started;
    expect(ending).toEqual({ type: 'stopped' });
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(5000);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(processGone(pid)).toBe(true);
  });

  it('cancel: stops the CLI gracefully and observes what it prints meanwhile', async () => {
    const cancel = new AbortController();
    const { seen, observe } = collect((line) => {
      if (line === 'working') cancel.abort();
      return 'continue';
    });
    const ending = await runCli({
      command: node,
      args: script(`
        process.on('SIGINT', () => { console.log('late usage'); process.exit(130); });
        console.log('working'); setInterval(() => {}, 1000);`),
      cancel: cancel.signal,
      stopGraceMs: 2000,
      observe,
    });
    expect(ending).toEqual({ type: 'cancelled' });
    expect(seen).toEqual(['working', 'late usage']);
  });

  it('cancel wins over a stop', async () => {
    const cancel = new AbortController();
    const ending = await runCli({
      command: node,
      args: script(
        `process.on('SIGINT', () => setTimeout(() => process.exit(0), 100)); console.log('x'); setInterval(() => {}, 1000);`,
      ),
      cancel: cancel.signal,
      observe: () => {
        setTimeout(() => cancel.abort(), 10);
        return 'stop';
      },
    });
    expect(ending).toEqual({ type: 'cancelled' });
  });

  it('an already cancelled run spawns nothing', async () => {
    const cancel = new AbortController();
    cancel.abort();
    const { seen, observe } = collect();
    const ending = await runCli({
      command: 'sh',
      args: ['-c', 'echo spawned'],
      cancel: cancel.signal,
      observe,
    });
    expect(ending).toEqual({ type: 'cancelled' });
    expect(seen).toEqual([]);
  });

  it('an unspawnable command is a failed ending, never a crash', async () => {
    const ending = await runCli({ command: '/nonexistent/agent-cli', args: [], observe: () => 'continue' });
    expect(ending.type).toBe('failed');
    if (ending.type === 'failed')
      expect(ending.reason).toMatch(/^cannot spawn \/nonexistent\/agent-cli: .*ENOENT/);
  });

  it('an observer that throws fails the run and the CLI is torn down', async () => {
    const ending = await runCli({
      command: node,
      args: script(`console.log('x'); setInterval(() => {}, 1000);`),
      observe: () => {
        throw new Error('observer bug');
      },
    });
    expect(ending).toEqual({ type: 'failed', reason: 'shim run failed: observer bug' });
  });

  it('a CLI that closes stdout but lingers gets the bounded exit wait: code −1', async () => {
    const started = Date.now();
    const ending = await runCli({
      command: 'sh',
      args: ['-c', 'echo bye; exec >&-; exec sleep 5'],
      exitWaitMs: 200,
      observe: () => 'continue',
    });
    expect(ending).toEqual({ type: 'exited', code: -1 });
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('a CLI killed by a signal reports 128 + its number', async () => {
    const ending = await runCli({ command: 'sh', args: ['-c', 'kill -TERM $$'], observe: () => 'continue' });
    expect(ending).toEqual({ type: 'exited', code: 143 });
  });

  it('an aborted run kills the CLI and rejects with the reason', async () => {
    const abort = new AbortController();
    let pid = 0;
    const running = runCli({
      command: node,
      args: script(`process.on('SIGINT', () => {}); console.log(process.pid); setInterval(() => {}, 1000);`),
      abort: abort.signal,
      observe: (line) => {
        pid = Number(line);
        abort.abort(new Error('caller gone'));
        return 'continue';
      },
    });
    await expect(running).rejects.toThrow('caller gone');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(processGone(pid)).toBe(true);
  });
});
