import { readFile } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { type ImageSpecInput, type ImageView, imageSpecSchema } from '@libos/protocol';
import type { Command } from 'commander';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { adminClient, type GlobalOptions } from '../context.js';
import { CliError } from '../errors.js';
import { emit, table } from '../output.js';
import { resolveLibosCommand } from './libos-command.js';

/** A file holds one image (named by --name or the file name), or a map of name → image. */
const imageFileSchema = z.union([
  z.record(z.string(), imageSpecSchema).refine((m) => Object.keys(m).length > 0, 'no images'),
  imageSpecSchema,
]);

export async function readImageFile(path: string, name?: string): Promise<Record<string, ImageSpecInput>> {
  const text = await readFile(path, 'utf8');
  const yaml = /\.ya?ml$/i.test(path);
  let data: unknown;
  try {
    data = yaml ? parseYaml(text) : JSON.parse(text);
  } catch (error) {
    throw new CliError(
      `${path} is not valid ${yaml ? 'YAML' : 'JSON'} (${(error as Error).message.split('\n')[0]}): give a .json or .yaml file`,
    );
  }
  const single = imageSpecSchema.safeParse(data);
  if (single.success) return { [name ?? basename(path, extname(path))]: data as ImageSpecInput };
  const parsed = imageFileSchema.safeParse(data);
  if (!parsed.success) {
    throw new CliError(
      `${path}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  }
  return data as Record<string, ImageSpecInput>;
}

export function registerImageCommands(program: Command): void {
  const images = program
    .command('images')
    .description('register and list images (how workers launch children)');
  images
    .command('put')
    .description('register images from a JSON or YAML file, or one image from flags')
    .argument('[name]', 'image name (for flags, or a single-image file)')
    .option('-f, --file <path>', 'JSON or YAML: one image, or a map of name → image')
    .option('--command <command>', 'executable (`libos`: this installation, by absolute path)')
    .option('--arg <arg...>', 'arguments; one must name {result_file}')
    .option('--pool <pool>', 'worker pool (queue)')
    .option('--deadline-ms <ms>', 'deadline per launch')
    .action(
      async (
        name: string | undefined,
        opts: { file?: string; command?: string; arg?: string[]; pool?: string; deadlineMs?: string },
      ) => {
        const global = program.opts<GlobalOptions>();
        let specs: Record<string, ImageSpecInput>;
        if (opts.file) {
          specs = await readImageFile(opts.file, name);
        } else {
          if (!name || !opts.command)
            throw new CliError('images put: give --file, or a name with --command and --arg');
          specs = {
            [name]: {
              command: opts.command,
              args: opts.arg ?? [],
              ...(opts.pool ? { pool: opts.pool } : {}),
              ...(opts.deadlineMs ? { deadline_ms: Number(opts.deadlineMs) } : {}),
            },
          };
        }
        const admin = await adminClient(global);
        const stored: ImageView[] = [];
        for (const [imageName, spec] of Object.entries(specs))
          stored.push(await admin.putImage(imageName, resolveLibosCommand(spec)));
        emit(global.json, stored, () =>
          stored.map((image) => `image ${image.name} stored (pool ${image.spec.pool})`).join('\n'),
        );
      },
    );
  images
    .command('list')
    .description('list registered images')
    .action(async () => {
      const global = program.opts<GlobalOptions>();
      const list = await (await adminClient(global)).listImages();
      emit(global.json, list, () =>
        table(
          ['NAME', 'KIND', 'POOL', 'COMMAND'],
          list.map((i) => [i.name, i.kind, i.spec.pool, [i.spec.command, ...i.spec.args].join(' ')]),
        ),
      );
    });
}
