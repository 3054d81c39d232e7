import { readFile } from 'node:fs/promises';
import { RESULT_FILE_PLACEHOLDER } from '@libos/contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isDialectName, parseShimOptions } from '../src/index.js';

const imageSchema = z.object({
  command: z.string().min(1),
  args: z.array(z.string()),
  kind: z.string().optional(),
  pool: z.string().optional(),
  deadline_ms: z.number().int().positive().optional(),
  env: z.record(z.string(), z.string()).optional(),
});

describe('examples/images', () => {
  for (const name of ['claude', 'codex']) {
    it(`${name}.json launches \`libos shim ${name}\` with the result path in its argv`, async () => {
      const text = await readFile(new URL(`../../../examples/images/${name}.json`, import.meta.url), 'utf8');
      const image = imageSchema.parse(JSON.parse(text));
      expect(image.args.some((arg) => arg.includes(RESULT_FILE_PLACEHOLDER))).toBe(true);
      // `libos` is resolved at registration to this installation's entry (never `npx`).
      expect(image.command).toBe('libos');
      const at = image.args.indexOf('shim');
      expect(at).toBe(0);
      const dialect = image.args[at + 1];
      expect(isDialectName(dialect) && dialect === name).toBe(true);
      const argv = image.args
        .slice(at + 2)
        .map((arg) => arg.replaceAll(RESULT_FILE_PLACEHOLDER, '/tmp/r.json'));
      const parsed = parseShimOptions(argv, name);
      expect(parsed.type === 'options' && parsed.options.resultFile).toBe('/tmp/r.json');
    });
  }
});
