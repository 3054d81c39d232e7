import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI_FROM_SOURCE } from './helpers.js';

let dir: string | undefined;
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Direct children of `parent` still running (a zombie has exited). */
function liveChildren(parent: number): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === parent && fields[0] !== 'Z') found.push(Number(name));
    } catch {}
  }
  return found;
}

function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] !== 'Z';
  } catch {
    return false;
  }
}

describe('libos demo --keep', () => {
  it('stops its embedded cluster on Ctrl-C, leaving no part behind', async () => {
    dir = await mkdtemp(join(tmpdir(), 'libos-demo-'));
    const env: NodeJS.ProcessEnv = {};
    for (const [name, value] of Object.entries(process.env))
      if (!name.startsWith('LIBOS_')) env[name] = value;
    const demo = spawn(
      process.execPath,
      [
        ...CLI_FROM_SOURCE,
        '--dir',
        dir,
        'demo',
        '--keep',
        '--children',
        '2',
        '--leaves',
        '1',
        '--workers',
        '1',
      ],
      { env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exited = new Promise<number | null>((resolve) => demo.once('exit', (code) => resolve(code)));
    let out = '';
    await new Promise<void>((resolve, reject) => {
      demo.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('keeps running')) resolve();
      });
      exited.then((code) => reject(new Error(`demo exited (${code}): ${out}`)));
    });
    // It prints where the console shows the demo's tree, and the console answers there.
    const consoleUrl = /console: +(http:\/\/\S+\/ui\/#\/tree\/p[0-9a-z]+)/.exec(out)?.[1];
    expect(consoleUrl, out).toBeDefined();
    const form = await fetch((consoleUrl as string).replace(/#.*$/, ''));
    expect(form.status).toBe(200);
    expect(await form.text()).toContain('Admin token');
    const parts = liveChildren(demo.pid!);
    expect(parts.length).toBeGreaterThanOrEqual(3); // redis-server, the coordinator, a worker
    demo.kill('SIGINT');
    expect(await exited).toBe(0);
    const until = Date.now() + 20_000;
    while (parts.some(running) && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(parts.filter(running)).toEqual([]);
  }, 90_000);
});
