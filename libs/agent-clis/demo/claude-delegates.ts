// A real Claude Code, as a libos process on `libos up`, delegating to two libos children through
// the libos MCP server; then the tree. Offline by default: its model is the scripted one on
// loopback (`delegatingModel`), so no API key is needed. With ANTHROPIC_API_KEY (and optionally
// ANTHROPIC_BASE_URL) set, the real model is asked instead. Needs `npm run build`.
//   npm run demo:claude   (node --import tsx libs/agent-clis/demo/claude-delegates.ts)
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { claudeBin, claudeOfflineEnv, delegatingModel, startModelServer } from '../src/index.js';

const repo = (path: string) => fileURLToPath(new URL(`../../../${path}`, import.meta.url));
const LIBOS = repo('apps/cli/bin/libos.js');

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const real = (process.env.ANTHROPIC_API_KEY ?? '') !== '';
const model = real
  ? undefined
  : await startModelServer({
      turns: [
        delegatingModel({
          image: 'echo',
          inputs: [{ query: 'first question' }, { query: 'second question' }],
        }),
      ],
    });
process.stderr.write(
  model === undefined
    ? `model: the real one (${process.env.ANTHROPIC_BASE_URL ?? 'api.anthropic.com'})\n`
    : `model: scripted, on ${model.url} (set ANTHROPIC_API_KEY for the real one)\n`,
);
const dir = await mkdtemp(join(tmpdir(), 'libos-agents-demo-'));
// Asynchronously: the scripted model answers from this very process.
const libos = async (...args: string[]) =>
  (await promisify(execFile)(process.execPath, [LIBOS, '--dir', dir, ...args], { encoding: 'utf8' })).stdout;

// Workers pass their environment on to children: the CLI's model settings ride there.
const up: ChildProcess = spawn(
  process.execPath,
  [LIBOS, '--dir', dir, 'up', '--workers', '1', '--port', String(await freePort())],
  {
    env: { ...process.env, ...(model && claudeOfflineEnv(model.url)), LIBOS_LOG_LEVEL: 'warn' },
    stdio: 'ignore',
  },
);
try {
  for (let i = 0; !existsSync(join(dir, 'cluster.json')); i++) {
    if (up.exitCode !== null || i > 900) throw new Error('libos up did not start');
    await sleep(100);
  }
  // The project's claude image as `libos images put` stores it, with the CLI this package pins.
  const claude = JSON.parse(await readFile(repo('examples/images/claude.json'), 'utf8')) as {
    args: string[];
  };
  claude.args.push('--command', claudeBin());
  const images = join(dir, 'images.json');
  const echo = { command: process.execPath, args: [repo('examples/dist/children/echo.js'), '{result_file}'] };
  await writeFile(images, JSON.stringify({ claude, echo }));
  process.stdout.write(await libos('images', 'put', '-f', images));
  process.stdout.write(
    await libos(
      'run',
      'claude',
      '--goal',
      'ask two children',
      '--input',
      JSON.stringify({
        query:
          'Use the libos tools: spawn two libos child processes of image "echo" (inputs "first question" and "second question"), wait for both, read their results (read_object on each result_oid) and report them.',
      }),
      '--budget',
      '{"children":2}',
    ),
  );
  process.stdout.write(await libos('ps', '--tree'));
} finally {
  up.kill('SIGINT');
  await new Promise((resolve) => up.once('exit', resolve));
  await model?.close();
  await rm(dir, { recursive: true, force: true });
}
