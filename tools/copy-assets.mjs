#!/usr/bin/env node
// Copy non-TypeScript assets (e.g. Lua scripts) from a source tree into the build output,
// keeping relative paths: node tools/copy-assets.mjs <from> <to> <ext> [<ext>...]
import { copyFile, mkdir, readdir } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';

const [from, to, ...exts] = process.argv.slice(2);
if (!from || !to || exts.length === 0) {
  console.error('usage: copy-assets.mjs <from> <to> <ext> [<ext>...]');
  process.exit(2);
}

async function* walk(dir) {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(path);
    else if (exts.some((ext) => entry.name.endsWith(ext))) yield path;
  }
}

let copied = 0;
for await (const file of walk(from)) {
  const target = join(to, relative(from, file));
  await mkdir(dirname(target), { recursive: true });
  await copyFile(file, target);
  copied += 1;
}
console.log(`copied ${copied} asset(s) from ${from} to ${to}`);
