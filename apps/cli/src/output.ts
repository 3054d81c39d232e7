import { stripVTControlCharacters } from 'node:util';
import type { ProcessStatus } from '@libos/protocol';

const useColour = process.stdout.isTTY && !process.env.NO_COLOR;
const CODES = { red: 31, green: 32, yellow: 33, blue: 34, magenta: 35, cyan: 36, grey: 90, bold: 1 } as const;
export type Colour = keyof typeof CODES;

export function paint(colour: Colour, text: string): string {
  return useColour ? `\u001b[${CODES[colour]}m${text}\u001b[0m` : text;
}

const STATUS_COLOURS: Record<ProcessStatus, Colour> = {
  runnable: 'cyan',
  running: 'blue',
  waiting_event: 'magenta',
  paused: 'yellow',
  exited: 'green',
  failed: 'red',
  killed: 'red',
};

export function paintStatus(status: ProcessStatus): string {
  return paint(STATUS_COLOURS[status], status);
}

const visible = (text: string) => stripVTControlCharacters(text).length;

/** A plain left-aligned table; cells may carry colour codes. */
export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(visible(h), ...rows.map((r) => visible(r[i] ?? ''))));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => cell + ' '.repeat(Math.max(0, widths[i]! - visible(cell))))
      .join('  ')
      .trimEnd();
  return [line(headers.map((h) => paint('bold', h))), ...rows.map(line)].join('\n');
}

/** Prints `value` as JSON with --json, else the human text. */
export function emit(json: boolean | undefined, value: unknown, human: () => string): void {
  process.stdout.write(`${json ? JSON.stringify(value, null, 2) : human()}\n`);
}
