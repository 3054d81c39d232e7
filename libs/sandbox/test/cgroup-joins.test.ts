import { readFileSync } from 'node:fs';
import { release } from 'node:os';
import { expect, it } from 'vitest';
import { cgroupJoinFix } from '../src/index.js';

const V1 = 'cgroup /sys/fs/cgroup/pids cgroup rw,relatime,pids 0 0';

it('cgroup joins wait unless a cgroup2 mount has favordynmods; the fix remounts one, or mounts one where none is', () => {
  expect(cgroupJoinFix(`${V1}\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n`, '6.1.0')).toBe(
    'mount -o remount,favordynmods /sys/fs/cgroup/unified',
  );
  expect(cgroupJoinFix(`${V1}\n`, '6.1.0')).toBe(
    'mkdir -p /run/libos-cgroup2 && mount -t cgroup2 -o favordynmods none /run/libos-cgroup2',
  );
  expect(
    cgroupJoinFix(`${V1}\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime,favordynmods 0 0\n`, '6.1.0'),
  ).toBeUndefined();
  expect(
    cgroupJoinFix(
      'cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate,favordynmods,memory_recursiveprot 0 0',
      '6.1.0',
    ),
  ).toBeUndefined();
  // the option belongs to cgroup2 mounts only; a path that names it proves nothing
  expect(cgroupJoinFix('tmpfs /favordynmods tmpfs rw,favordynmods 0 0', '6.1.0')).toContain(
    'mount -t cgroup2',
  );
  // a mount point with a space (/proc/mounts writes it \040) is given to the shell as one word
  expect(cgroupJoinFix("cgroup2 /mnt/it's\\040here cgroup2 rw 0 0", '6.1.0')).toBe(
    "mount -o remount,favordynmods '/mnt/it'\\''s here'",
  );
  // Linux before 6.0 has no such option: nothing to suggest
  expect(cgroupJoinFix(`${V1}\n`, '5.15.0-91-generic')).toBeUndefined();
  // and it reads this host's table without throwing
  const here = cgroupJoinFix(readFileSync('/proc/mounts', 'utf8'), release());
  expect(here === undefined || here.includes('favordynmods')).toBe(true);
});
