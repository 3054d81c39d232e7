import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

// The real agent CLIs this package pins (dev dependencies), and how to point them at a scripted
// model on loopback with nothing else reachable: a dummy key, the model's URL, and every
// background call (telemetry, update checks, error reports, feedback) switched off.

const require = createRequire(import.meta.url);

export const CLAUDE_CODE_VERSION = '2.1.328';
export const CODEX_VERSION = '0.169.0';

/**
 * Claude Code's native executable, from its platform package. The `@anthropic-ai/claude-code`
 * wrapper is not installed: it only links this same binary in a postinstall script (which npm 11
 * does not run unless allowed) and declares Node >= 22 (an engine warning on Node 20).
 */
export function claudeBin(): string {
  const platform = `@anthropic-ai/claude-code-${process.platform}-${process.arch}`;
  return join(dirname(require.resolve(`${platform}/package.json`)), 'claude');
}

/** Codex's launcher (a node script that runs the platform's native binary). */
export function codexBin(): string {
  return join(dirname(require.resolve('@openai/codex/package.json')), 'bin', 'codex.js');
}

/** The environment that makes Claude Code talk only to `modelUrl`. */
export function claudeOfflineEnv(modelUrl: string): Record<string, string> {
  return {
    ANTHROPIC_BASE_URL: modelUrl,
    ANTHROPIC_API_KEY: 'sk-ant-scripted',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_BUG_COMMAND: '1',
    CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY: '1',
  };
}

/** The variable Codex reads the scripted provider's key from. */
export const CODEX_KEY_VAR = 'SCRIPTED_MODEL_KEY'; // not LIBOS_*: workers pass none of those on

export function codexOfflineEnv(): Record<string, string> {
  return { [CODEX_KEY_VAR]: 'sk-scripted' };
}

/**
 * Codex arguments (`exec` options, passed through the shim after `--`) that make it use a model
 * provider at `modelUrl` (Responses API, no retries) and check for no update.
 */
export function codexOfflineArgs(modelUrl: string, model = 'gpt-5'): string[] {
  const provider = `{name="scripted",base_url="${modelUrl}/v1",env_key="${CODEX_KEY_VAR}",wire_api="responses",request_max_retries=0,stream_max_retries=0}`;
  return [
    '-c',
    'model_provider="scripted"',
    '-c',
    `model_providers.scripted=${provider}`,
    '-c',
    'check_for_update_on_startup=false',
    '-m',
    model,
  ];
}
