#!/usr/bin/env node
// `node --import tsx --conditions=@libos/source libs/shim/src/bin.ts claude --result-file F`
// (or `node libs/shim/dist/bin.js codex …` once built).
import { shimMain } from './main.js';

process.exit(await shimMain(process.argv.slice(2)));
