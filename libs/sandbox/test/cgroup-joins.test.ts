import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { cgroupJoinsWait } from '../src/index.js';

const V1 = 'cgroup /sys/fs/cgroup/pids cgroup rw,relatime,pids 0 0';

it('cgroup joins wait unless a cgroup2 mount has favordynmods', () => {
  expect(cgroupJoinsWait(`${V1}\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n`)).toBe(true);
  expect(cgroupJoinsWait(`${V1}\n`)).toBe(true);
  expect(
    cgroupJoinsWait(`${V1}\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime,favordynmods 0 0\n`),
  ).toBe(false);
  expect(
    cgroupJoinsWait('cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate,favordynmods,memory_recursiveprot 0 0'),
  ).toBe(false);
  // the option belongs to cgroup2 mounts only; a path that names it proves nothing
  expect(cgroupJoinsWait('tmpfs /favordynmods tmpfs rw,favordynmods 0 0')).toBe(true);
  // and it reads this host's table without throwing
  expect(typeof cgroupJoinsWait(readFileSync('/proc/mounts', 'utf8'))).toBe('boolean');
});
