/**
 * The fleet as deploy/ describes it: the Kubernetes manifests validate against the Kubernetes
 * (and KEDA) schemas, Debian's docker-compose accepts the compose file, and the compose topology,
 * started as plain processes with the compose file's own environment and commands, runs the demo.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '@libos/testkit';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { CLI_SOURCE, eventually } from '../src/index.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const deploy = join(repo, 'deploy');

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  [key: string]: unknown;
}
type Model = new (data: Manifest) => { validate(): void };

/** The model class for a manifest: kubernetes-models for the core API, its KEDA package for KEDA. */
async function modelOf(manifest: Manifest): Promise<Model> {
  const [group, version] = manifest.apiVersion.includes('/')
    ? manifest.apiVersion.split('/')
    : ['', manifest.apiVersion];
  const module =
    group === 'keda.sh'
      ? `@kubernetes-models/keda/keda.sh/${version}/${manifest.kind}`
      : `kubernetes-models/${group ? `${group}/` : ''}${version}/${manifest.kind}`;
  const loaded = (await import(module)) as { default?: Model } & Record<string, Model>;
  return loaded.default ?? loaded[manifest.kind]!;
}

describe('deploy/k8s', () => {
  const manifests = parseAllDocuments(readFileSync(join(deploy, 'k8s/libos.yaml'), 'utf8')).map(
    (document) => document.toJS() as Manifest,
  );

  it('every manifest validates against its Kubernetes or KEDA schema', async () => {
    expect(manifests.map((m) => `${m.kind}/${m.metadata.name}`)).toEqual(
      expect.arrayContaining([
        'StatefulSet/libos-redis',
        'Deployment/libos-coordinator',
        'Deployment/libos-worker',
        'NetworkPolicy/libos-worker',
        'ScaledObject/libos-worker',
      ]),
    );
    for (const manifest of manifests) {
      const Model = await modelOf(manifest);
      expect(
        () => new Model(manifest).validate(),
        `${manifest.kind}/${manifest.metadata.name}`,
      ).not.toThrow();
    }
  });

  it('(control) the validator refuses a broken manifest', async () => {
    const worker = structuredClone(manifests.find((m) => m.metadata.name === 'libos-worker')!);
    (worker.spec as { replicas: unknown }).replicas = 'three';
    const Model = await modelOf(worker);
    expect(() => new Model(worker).validate()).toThrow(/replicas/);
  });

  it('every container has resources and probes', () => {
    for (const manifest of manifests.filter((m) => ['Deployment', 'StatefulSet'].includes(m.kind))) {
      const spec = manifest.spec as { template: { spec: { containers: Record<string, unknown>[] } } };
      for (const container of spec.template.spec.containers) {
        const name = `${manifest.metadata.name}/${String(container.name)}`;
        expect(container.resources, name).toBeDefined();
        expect(container.readinessProbe, name).toBeDefined();
        expect(container.livenessProbe, name).toBeDefined();
      }
    }
  });
});

interface ComposeService {
  command?: string[];
  environment?: Record<string, string>;
  deploy?: { replicas?: number };
  user?: string;
}

/** The compose file as docker-compose resolves it (interpolation, defaults). */
function composeConfig(env: Record<string, string> = {}): { services: Record<string, ComposeService> } {
  const text = execFileSync('docker-compose', ['-f', join(deploy, 'compose.yaml'), 'config'], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, ...env },
  });
  return parse(text) as { services: Record<string, ComposeService> };
}

describe('deploy/compose.yaml', () => {
  const started: ChildProcess[] = [];
  const state = mkdtempSync(join(tmpdir(), 'libos-compose-'));
  afterAll(async () => {
    for (const child of started) child.kill('SIGKILL');
    rmSync(state, { recursive: true, force: true });
  });

  it("docker-compose accepts it, and LIBOS_WORKERS sets the workers' replicas", () => {
    const config = composeConfig();
    expect(Object.keys(config.services).sort()).toEqual(['coordinator', 'redis', 'worker']);
    expect(config.services.worker?.deploy?.replicas).toBe(2);
    expect(composeConfig({ LIBOS_WORKERS: '3' }).services.worker?.deploy?.replicas).toBe(3);
    expect(config.services.worker?.user).toBe('0:0');
    expect(config.services.coordinator?.user).toBeUndefined(); // the image's unprivileged user
  });

  it('its topology, as processes with its environment, runs the demo', async () => {
    const { services } = composeConfig();
    // The compose secrets, as files; the container paths mapped to this machine's.
    const secrets = join(state, 'secrets');
    mkdirSync(secrets, { mode: 0o700 });
    const adminToken = `compose-admin-${process.pid}-0123456789abcdef`;
    writeFileSync(join(secrets, 'admin_token'), adminToken, { mode: 0o600 });
    writeFileSync(join(secrets, 'redis_password'), `compose-redis-${process.pid}`, { mode: 0o600 });
    const redisPort = await freePort();
    const coordinatorPort = await freePort();
    const hosts: [string, string][] = [
      ['redis://redis:6379', `redis://127.0.0.1:${redisPort}`],
      ['http://coordinator:7070', `http://127.0.0.1:${coordinatorPort}`],
      ['/run/secrets', secrets],
      ['/app', repo],
    ];
    const mapped = (env: Record<string, string> = {}, extra: Record<string, string> = {}) => {
      const out: Record<string, string> = { PATH: process.env.PATH ?? '' };
      for (const [name, value] of Object.entries(env))
        out[name] = hosts.reduce((text, [from, to]) => text.replaceAll(from, to), String(value));
      return { ...out, ...extra };
    };

    // Redis: deploy/redis.conf with the password through an included file, as the compose entrypoint does.
    writeFileSync(
      join(state, 'requirepass.conf'),
      `requirepass ${readFileSync(join(secrets, 'redis_password'), 'utf8')}\n`,
      { mode: 0o600 },
    );
    mkdirSync(join(state, 'redis'));
    const redis = spawn(
      'redis-server',
      [join(deploy, 'redis.conf'), '--include', join(state, 'requirepass.conf'), '--port', String(redisPort)],
      { cwd: join(state, 'redis'), stdio: 'ignore' },
    );
    started.push(redis);
    const probe = new Redis({
      port: redisPort,
      password: `compose-redis-${process.pid}`,
      maxRetriesPerRequest: 0,
      retryStrategy: () => 50,
    });
    probe.on('error', () => undefined); // refused until redis-server listens: it reconnects
    await eventually(async () => expect(await probe.ping()).toBe('PONG'), { withinMs: 10_000 });

    // tsx by its path: the demo runs in a directory of its own, where `tsx` does not resolve.
    const cli = ['--import', import.meta.resolve('tsx'), '--conditions=@libos/source', CLI_SOURCE];
    const coordinator = spawn(process.execPath, [...cli, ...services.coordinator!.command!], {
      cwd: repo,
      env: mapped(services.coordinator!.environment, { LIBOS_PORT: String(coordinatorPort) }),
      stdio: 'ignore',
    });
    started.push(coordinator);
    const url = `http://127.0.0.1:${coordinatorPort}`;
    await eventually(async () => expect((await fetch(`${url}/healthz`)).status).toBe(200), {
      withinMs: 30_000,
    });

    // A launch no worker has taken yet waits in the list the KEDA trigger measures.
    const headers = { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' };
    await fetch(`${url}/v1/admin/images/compose-probe`, {
      method: 'PUT',
      headers,
      body: JSON.stringify({ command: 'sh', args: ['-c', 'read r', '{result_file}'] }),
    });
    await fetch(`${url}/v1/admin/processes`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ goal: 'queued', image: 'compose-probe', launch: true }),
    });
    const k8s = readFileSync(join(deploy, 'k8s/libos.yaml'), 'utf8');
    const listName = /listName: "([^"]+)"/.exec(k8s)?.[1];
    expect(listName).toBe('libos:{launch-default}:wait');
    expect(await probe.llen(listName!)).toBe(1);

    const workers = services.worker!.deploy!.replicas!;
    const opsPorts: number[] = [];
    let workerErrors = '';
    for (let i = 0; i < workers; i++) {
      const opsPort = await freePort();
      opsPorts.push(opsPort);
      const worker = spawn(process.execPath, [...cli, ...services.worker!.command!], {
        cwd: repo,
        env: mapped(services.worker!.environment, { LIBOS_WORKER_PORT: String(opsPort) }),
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      worker.stderr!.on('data', (chunk: Buffer) => {
        workerErrors += chunk.toString();
      });
      started.push(worker);
    }
    for (const port of opsPorts)
      await eventually(
        async () => expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200),
        { withinMs: 60_000, what: `worker /healthz on ${port} (stderr: ${workerErrors.slice(0, 500)})` },
      );

    const demo = spawn(process.execPath, [...cli, 'demo', '--url', url], {
      cwd: state,
      env: { PATH: process.env.PATH ?? '', LIBOS_ADMIN_TOKEN: adminToken },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    demo.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    demo.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => demo.once('exit', resolve));
    expect(output).toContain('8/8 children exited');
    expect(code, output).toBe(0);
    probe.disconnect();
  }, 180_000);
});
