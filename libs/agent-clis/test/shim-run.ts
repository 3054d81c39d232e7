import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  claudeBin,
  claudeOfflineEnv,
  codexBin,
  codexOfflineArgs,
  codexOfflineEnv,
  type ModelServer,
  startModelServer,
  type Turn,
} from '../src/index.js';

/** The built shim, as a worker runs it (`libos shim` is this entry behind the CLI). */
export const SHIM_BIN = fileURLToPath(new URL('../../shim/dist/bin.js', import.meta.url));

export interface ShimRunOptions {
  turns: Turn[];
  /** Request fields over `{version, request_id, kind: 'explore', input: {query: 'say hi'}}`. */
  request?: Record<string, unknown>;
  /** Shim options before `--` (besides --result-file and --command). */
  shim?: string[];
  /** CLI arguments after `--`. */
  passthrough?: string[];
  env?: Record<string, string>;
  /** Close the shim's stdin (the parent's cancel) once this resolves. */
  cancelWhen?: (server: ModelServer) => Promise<void>;
  /** The CLI's working directory. */
  cwd?: string;
}

export interface ShimRunResult {
  code: number | null;
  stderr: string;
  result: Record<string, unknown> | undefined;
  server: ModelServer;
}

/**
 * One shim run as a libos worker makes it: the shim as its own process, a request line on its
 * stdin kept open, the real CLI underneath talking to a scripted model on loopback. HOME is a
 * fresh directory, so no state of this machine's CLIs is read or written.
 */
export async function runRealShim(
  dialect: 'claude' | 'codex',
  options: ShimRunOptions,
): Promise<ShimRunResult> {
  const server = await startModelServer({ turns: options.turns });
  const dir = await mkdtemp(join(tmpdir(), 'libos-real-cli-'));
  try {
    const resultFile = join(dir, 'result.json');
    const command = dialect === 'claude' ? claudeBin() : codexBin();
    const passthrough = [
      ...(dialect === 'codex' ? codexOfflineArgs(server.url) : []),
      ...(options.passthrough ?? []),
    ];
    const args = [
      SHIM_BIN,
      dialect,
      '--result-file',
      resultFile,
      '--command',
      command,
      ...(options.shim ?? []),
    ];
    if (passthrough.length > 0) args.push('--', ...passthrough);
    const child = spawn(process.execPath, args, {
      cwd: options.cwd ?? dir,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: dir,
        ...(dialect === 'claude' ? claudeOfflineEnv(server.url) : codexOfflineEnv()),
        ...options.env,
      },
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.stdin.on('error', () => {}); // a shim that already ended
    child.stdin.write(
      `${JSON.stringify({ version: 1, request_id: 'req-1', kind: 'explore', input: { query: 'say hi' }, ...options.request })}\n`,
    );
    if (options.cancelWhen !== undefined) {
      await Promise.race([options.cancelWhen(server), exited]);
      child.stdin.end();
    }
    const code = await exited;
    let result: Record<string, unknown> | undefined;
    try {
      result = JSON.parse(await readFile(resultFile, 'utf8')) as Record<string, unknown>;
    } catch {
      result = undefined;
    }
    return { code, stderr, result, server };
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Resolves once the model server has begun answering an agent-loop request. */
export async function streaming(server: ModelServer): Promise<void> {
  while (server.turnsUsed().length === 0) await new Promise((resolve) => setTimeout(resolve, 25));
  // The head of the reply (with its usage) is on the wire; let the CLI read it.
  await new Promise((resolve) => setTimeout(resolve, 500));
}
