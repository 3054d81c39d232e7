import { describe, expect, it } from 'vitest';
import { parseShimOptions } from '../src/index.js';

describe('parseShimOptions', () => {
  it('takes defaults, settings, and verbatim passthrough after --', () => {
    expect(parseShimOptions(['--result-file', '/r'], 'codex')).toEqual({
      type: 'options',
      options: {
        resultFile: '/r',
        command: 'codex',
        writable: false,
        schemaCheck: true,
        libosMcp: true,
        extra: [],
      },
    });
    const full = parseShimOptions(
      [
        '--result-file=/r.json',
        '--command',
        '/bin/claude2',
        '--model',
        'm',
        '--cwd',
        '/w',
        '--writable',
        '--schema',
        's.json',
        '--',
        '--model',
        'theirs',
        '--result-file',
        'x',
      ],
      'claude',
    );
    expect(full).toEqual({
      type: 'options',
      options: {
        resultFile: '/r.json',
        command: '/bin/claude2',
        model: 'm',
        cwd: '/w',
        writable: true,
        schemaCheck: true,
        libosMcp: true,
        schema: 's.json',
        // The CLI's own flags rode through untouched; ours stayed ours.
        extra: ['--model', 'theirs', '--result-file', 'x'],
      },
    });
  });

  it('turns off the schema check and the libos MCP server; narrows the libos tools to known names', () => {
    const parsed = parseShimOptions(
      [
        '--result-file',
        '/r',
        '--no-schema-check',
        '--no-libos-mcp',
        '--libos-tools',
        'spawn_child_process, wait_child_process',
      ],
      'claude',
    );
    expect(parsed).toMatchObject({
      type: 'options',
      options: {
        schemaCheck: false,
        libosMcp: false,
        libosTools: ['spawn_child_process', 'wait_child_process'],
      },
    });
    const unknown = parseShimOptions(
      ['--result-file', '/r', '--libos-tools', 'spawn_child_process,rm_rf'],
      'claude',
    );
    expect(unknown.type === 'error' && unknown.problem).toMatch(/^--libos-tools: no libos tool named rm_rf/);
    const empty = parseShimOptions(['--result-file', '/r', '--libos-tools', ' , '], 'claude');
    expect(empty.type === 'error' && empty.problem).toMatch(/^--libos-tools needs tool names/);
  });

  it('requires --result-file, and a --result-file after -- does not count', () => {
    for (const argv of [[], ['--', '--result-file', '/r']]) {
      const parsed = parseShimOptions(argv, 'claude');
      expect(parsed.type).toBe('error');
      if (parsed.type === 'error') expect(parsed.problem).toContain('--result-file');
    }
  });

  it('refuses a blank or missing path', () => {
    for (const argv of [['--result-file', ' '], ['--result-file='], ['--result-file']]) {
      const parsed = parseShimOptions(argv, 'claude');
      expect(parsed.type).toBe('error');
      if (parsed.type === 'error') expect(parsed.problem.split('\n')[0]).toBe('--result-file needs a path');
    }
  });

  it('refuses an unknown option with help naming the meant flag', () => {
    const parsed = parseShimOptions(['--result-file', '/r', '--writeable'], 'claude');
    expect(parsed.type).toBe('error');
    if (parsed.type !== 'error') return;
    expect(parsed.problem).toContain("unexpected argument '--writeable'");
    expect(parsed.problem).toContain("did you mean '--writable'?");
    expect(parsed.problem).toContain('Usage: libos shim claude --result-file PATH');
    // A stray positional is refused too: it must not silently become a prompt.
    const stray = parseShimOptions(['--result-file', '/r', 'hello'], 'codex');
    expect(stray.type === 'error' && stray.problem.startsWith("unexpected argument 'hello'\n")).toBe(true);
  });

  it('prints help for --help, before anything else is checked', () => {
    const parsed = parseShimOptions(['--bogus', '--help'], 'codex');
    expect(parsed.type).toBe('help');
    if (parsed.type === 'help') {
      expect(parsed.text).toContain('--writable');
      expect(parsed.text).toContain('-- ARGS...');
    }
    // After `--` it is the CLI's.
    expect(parseShimOptions(['--result-file', '/r', '--', '--help'], 'codex').type).toBe('options');
  });
});
