import { mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The system calls a child may not make, by the architectures a process of this host's can call
 * them through (`seccomp_data.arch`: a 64-bit process may also make the 32-bit calls). They are
 * the kernel keyring's: add_key, request_key and keyctl. A uid's keyrings are not namespaced and
 * outlive its processes, and a sandbox's uid is reused by the next launch, of any tree: a key one
 * child adds (a secret it keeps there, a message) is readable by whichever child gets the uid
 * next. Docker's default profile refuses the same three for the same reason; no child needs them.
 */
const REFUSED: Record<string, { arch: number; calls: number[] }[]> = {
  x64: [
    // AUDIT_ARCH_X86_64; x32 calls are the same numbers with bit 30 set.
    { arch: 0xc000003e, calls: [248, 249, 250, 0x40000000 | 248, 0x40000000 | 249, 0x40000000 | 250] },
    { arch: 0x40000003, calls: [286, 287, 288] }, // AUDIT_ARCH_I386
  ],
  arm64: [
    { arch: 0xc00000b7, calls: [217, 218, 219] }, // AUDIT_ARCH_AARCH64
    { arch: 0x40000028, calls: [309, 310, 311] }, // AUDIT_ARCH_ARM
  ],
};

// Classic BPF, as seccomp(2) takes it: struct sock_filter { u16 code; u8 jt; u8 jf; u32 k }.
const LOAD_WORD = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JUMP_IF_EQUAL = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const RETURN = 0x06; // BPF_RET | BPF_K
const ALLOW = 0x7fff0000; // SECCOMP_RET_ALLOW
const REFUSE = 0x00050000 | 1; // SECCOMP_RET_ERRNO | EPERM
const NR = 0; // offsetof(struct seccomp_data, nr)
const ARCH = 4; // offsetof(struct seccomp_data, arch)

type Instruction = { code: number; jt: number | 'refuse'; jf: number; k: number };

/** The filter for `arch` (Node's name), as bwrap's `--seccomp` reads it; undefined for another. */
export function keyringFilter(arch: string = process.arch): Buffer | undefined {
  const refused = REFUSED[arch];
  if (!refused) return undefined;
  const program: Instruction[] = [{ code: LOAD_WORD, jt: 0, jf: 0, k: ARCH }];
  for (const { arch: audit, calls } of refused) {
    // This architecture's calls: past its block when the arch differs.
    program.push({ code: JUMP_IF_EQUAL, jt: 0, jf: calls.length + 2, k: audit });
    program.push({ code: LOAD_WORD, jt: 0, jf: 0, k: NR });
    for (const call of calls) program.push({ code: JUMP_IF_EQUAL, jt: 'refuse', jf: 0, k: call });
    program.push({ code: RETURN, jt: 0, jf: 0, k: ALLOW });
  }
  program.push({ code: RETURN, jt: 0, jf: 0, k: ALLOW });
  const refuse = program.length;
  program.push({ code: RETURN, jt: 0, jf: 0, k: REFUSE });
  const bytes = Buffer.alloc(program.length * 8);
  program.forEach(({ code, jt, jf, k }, i) => {
    // Jumps count from the next instruction.
    bytes.writeUInt16LE(code, i * 8);
    bytes.writeUInt8(jt === 'refuse' ? refuse - i - 1 : jt, i * 8 + 2);
    bytes.writeUInt8(jf, i * 8 + 3);
    bytes.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return bytes;
}

/**
 * The keyring filter of this host, for every launch: bwrap installs it (`--seccomp FD`) just
 * before it runs the child, so everything in the sandbox inherits it and none can remove it.
 */
export class SyscallFilter {
  private constructor(private readonly fd: number) {}

  /** Undefined on an architecture the filter does not know (see `keyringFilter`). */
  static forHost(arch: string = process.arch): SyscallFilter | undefined {
    const program = keyringFilter(arch);
    if (!program) return undefined;
    // Held by a descriptor, its file gone at once: nothing to clean up, nothing another can swap.
    const dir = mkdtempSync(join(tmpdir(), 'libos-seccomp-'));
    try {
      const path = join(dir, 'keyring.bpf');
      writeFileSync(path, program, { mode: 0o600 });
      return new SyscallFilter(openSync(path, 'r'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  /**
   * A descriptor of the program from its start, for one launch (bwrap reads to its end; the
   * launcher closes it after the spawn): the held file opened anew, with an offset of its own.
   */
  open(): number {
    return openSync(`/proc/self/fd/${this.fd}`, 'r');
  }
}
