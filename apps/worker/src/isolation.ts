import { statSync } from 'node:fs';
import type { ClaimedLaunch } from '@libos/protocol';
import { DEFAULT_MAX_RESULT_BYTES, memoryBacked } from '@libos/runner';
import {
  type ConfineRequest,
  DEFAULT_LIMITS,
  parseUidRange,
  type SandboxLimits,
  type SandboxSettings,
} from '@libos/sandbox';
import { z } from 'zod';

/** A list of absolute host paths, separated by `:` or `,`. */
const pathList = z
  .string()
  .default('')
  .transform((text) =>
    text
      .split(/[:,]/)
      .map((path) => path.trim())
      .filter((path) => path !== ''),
  )
  .pipe(z.array(z.string().regex(/^\//, 'paths must be absolute')));

/** The worker's containment settings (merged into its environment schema). */
export const isolationEnvShape = {
  /** `strict` refuses to start unless every protection holds; `auto` takes what the host has. */
  LIBOS_ISOLATION: z.enum(['strict', 'auto', 'none']).default('auto'),
  /** Uids for children, one per running child; shared by the host's workers through the locks. */
  LIBOS_CHILD_UIDS: z
    .string()
    .default('20000-29999')
    .transform((text, ctx) => {
      try {
        return parseUidRange(text);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message });
        return z.NEVER;
      }
    }),
  LIBOS_CHILD_UID_LOCKS: z.string().regex(/^\//).default('/run/libos/child-uids'),
  /** Host paths every sandbox shows read-only (where the images' programs live). */
  LIBOS_SANDBOX_RUNTIME: pathList,
  /** Host paths no sandbox shows, even inside a shown one (state directories such as `.libos`). */
  LIBOS_SANDBOX_HIDE: pathList,
  LIBOS_CGROUP_ROOT: z.string().regex(/^\//).optional(),
  /** The bubblewrap binary (Debian: apt-get install bubblewrap). */
  LIBOS_SANDBOX_BWRAP: z.string().min(1).default('bwrap'),
  /** A result file larger than this fails its launch unread. */
  LIBOS_MAX_RESULT_BYTES: z.coerce.number().int().min(1024).default(DEFAULT_MAX_RESULT_BYTES),
  /**
   * Where each launch's private result directory is made. Unset: /dev/shm when it is a tmpfs
   * with room to spare, else TMPDIR (see `resultParent`).
   */
  LIBOS_RESULT_DIR: z.string().regex(/^\//, 'LIBOS_RESULT_DIR must be an absolute path').optional(),
};

const isolationEnvSchema = z.object(isolationEnvShape);
type IsolationEnv = z.output<typeof isolationEnvSchema>;

export interface IsolationConfig {
  sandbox: SandboxSettings;
  maxResultBytes: number;
  /** LIBOS_RESULT_DIR, when set. */
  resultDir: string | undefined;
}

/** Memory a host's result directories go to when it has room: most Linux hosts mount it (tmpfs). */
const SHARED_MEMORY = '/dev/shm';
/**
 * The room /dev/shm must have: four times the largest results of every running child, and at
 * least 1 GiB. It is shared (by this worker's children, other workers, other programs) and one
 * child filling it fails the others' result writes, so a small one (a container's default 64 MiB)
 * is left alone.
 */
const SHARED_MEMORY_MIN_BYTES = 1024 ** 3;
const SHARED_MEMORY_HEADROOM = 4;

/**
 * Where the launches' result directories go: LIBOS_RESULT_DIR (which must be a directory), else
 * /dev/shm when it is a tmpfs with room (see SHARED_MEMORY_MIN_BYTES) for `running` children,
 * else undefined (the runner's TMPDIR). In memory each launch's mkdtemp, result write and rmdir cost
 * µs instead of a disk's journalled metadata changes (about a millisecond a launch under load on
 * a 2-core test VM's ext4); a sandboxed child's file counts against its memory limit.
 */
export function resultParent(config: IsolationConfig, running: number): string | undefined {
  if (config.resultDir !== undefined) {
    if (!statSync(config.resultDir, { throwIfNoEntry: false })?.isDirectory()) {
      throw new Error(`LIBOS_RESULT_DIR: ${config.resultDir} is not a directory`);
    }
    return config.resultDir;
  }
  const need = Math.max(SHARED_MEMORY_MIN_BYTES, SHARED_MEMORY_HEADROOM * running * config.maxResultBytes);
  return memoryBacked(SHARED_MEMORY, need);
}

export function isolationConfig(env: IsolationEnv): IsolationConfig {
  return {
    sandbox: {
      mode: env.LIBOS_ISOLATION,
      uids: env.LIBOS_CHILD_UIDS,
      lockDir: env.LIBOS_CHILD_UID_LOCKS,
      runtime: env.LIBOS_SANDBOX_RUNTIME,
      hide: [...env.LIBOS_SANDBOX_HIDE, env.LIBOS_CHILD_UID_LOCKS],
      cgroupName: 'libos',
      cgroupRoot: env.LIBOS_CGROUP_ROOT,
      bwrap: env.LIBOS_SANDBOX_BWRAP,
      prlimit: '/usr/bin/prlimit',
    },
    maxResultBytes: env.LIBOS_MAX_RESULT_BYTES,
    resultDir: env.LIBOS_RESULT_DIR,
  };
}

/** The image's limits over the defaults. */
export function limitsOf(claimed: ClaimedLaunch): SandboxLimits {
  const given = claimed.image_spec.limits ?? {};
  return {
    memoryMb: given.memory_mb ?? DEFAULT_LIMITS.memoryMb,
    pids: given.pids ?? DEFAULT_LIMITS.pids,
    cpuMs: given.cpu_ms,
    fileSizeMb: given.file_size_mb ?? DEFAULT_LIMITS.fileSizeMb,
    openFiles: given.open_files ?? DEFAULT_LIMITS.openFiles,
  };
}

/** What a claimed attempt's sandbox shows and allows: its cwd, inherited paths, image runtime. */
export function confineRequest(claimed: ClaimedLaunch): ConfineRequest {
  return {
    cwd: claimed.cwd,
    paths: claimed.inherited_paths.map(({ path, access }) => ({ path, access })),
    runtime: claimed.image_spec.runtime ?? [],
    limits: limitsOf(claimed),
    network: claimed.image_spec.network ?? 'host',
  };
}
