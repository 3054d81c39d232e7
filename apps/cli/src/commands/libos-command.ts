import { fileURLToPath } from 'node:url';
import type { ImageSpecInput } from '@libos/protocol';

/** This installation's `libos` entry (apps/cli/bin/libos.js), from both `src/` and `dist/`. */
export const LIBOS_BIN = fileURLToPath(new URL('../../bin/libos.js', import.meta.url));

/**
 * An image whose command is `libos` runs this installation's entry with this node, as absolute
 * paths: a child's PATH and cwd are the image's, and `npx` would look the package up (a 404
 * outside the checkout, seconds inside it). Workers see the same paths when they share the
 * layout (one checkout, or the container image); their sandbox must show it
 * (`LIBOS_SANDBOX_RUNTIME`, which `libos up` sets to the installation).
 */
export function resolveLibosCommand(spec: ImageSpecInput): ImageSpecInput {
  if (spec.command !== 'libos') return spec;
  return { ...spec, command: process.execPath, args: [LIBOS_BIN, ...(spec.args ?? [])] };
}
