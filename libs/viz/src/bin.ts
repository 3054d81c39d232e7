#!/usr/bin/env node
// `node --import tsx --conditions=@libos/source libs/viz/src/bin.ts journal.jsonl [out.html] [--watch]`
import { vizMain } from './main.js';

process.exitCode = await vizMain(process.argv.slice(2));
