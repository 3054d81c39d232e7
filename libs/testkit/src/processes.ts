import { readdirSync, readFileSync } from 'node:fs';

/**
 * Shell words a test child prints to name itself: its uid and its pid as it sees them. A
 * sandboxed child sees the pid of its own pid namespace, and every sandbox has a uid of its own,
 * so the pair names one host process (`hostPid`). `$!` instead of `$$` names its last background job.
 */
export const SELF_PID = '"$(id -u):$$"';
export const LAST_JOB_PID = '"$(id -u):$!"';

/**
 * The host pid of what a child printed as `SELF_PID` (or a plain host pid): the live process of
 * that uid whose pid in its innermost namespace is the one printed; undefined when none is left.
 */
export function hostPid(printed: string): number | undefined {
  const [uidText, nsText] = printed.includes(':') ? printed.split(':') : [undefined, printed];
  const nsPid = Number(nsText);
  if (uidText === undefined) return nsPid;
  const uid = Number(uidText);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const status = readFileSync(`/proc/${entry}/status`, 'utf8');
      const uids = /\nUid:\s+(\d+)/.exec(status);
      const nsPids = /\nNSpid:\s+([\d\s]+)\n/.exec(status)?.[1]?.trim().split(/\s+/);
      if (Number(uids?.[1]) === uid && Number(nsPids?.at(-1)) === nsPid) return Number(entry);
    } catch {}
  }
  return undefined;
}
