// Preloaded into a part (NODE_OPTIONS=--import=<this file>) by bench/gc-pauses.ts: V8 prints one
// line per collection to the part's stdout (`--trace-gc-nvp`: kind, pause, bytes promoted), which
// the bench reads from the part's log. Set here because NODE_OPTIONS refuses V8's tracing flags.
import { setFlagsFromString } from 'node:v8';

setFlagsFromString('--trace-gc-nvp');
