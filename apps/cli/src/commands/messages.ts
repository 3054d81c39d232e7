import { jsonValueSchema, messageKindSchema } from '@libos/protocol';
import type { Command } from 'commander';
import { type GlobalOptions, processClient } from '../context.js';
import { CliError, parseChoice } from '../errors.js';
import { emit, paint, table } from '../output.js';

function parseJson(what: string, text: string) {
  try {
    return jsonValueSchema.parse(JSON.parse(text));
  } catch {
    throw new CliError(`${what} must be JSON, e.g. '{"answer":42}'`);
  }
}

export function registerMessageCommands(program: Command): void {
  program
    .command('send')
    .description('send a message as the process of --token/LIBOS_TOKEN to self, its parent or a direct child')
    .requiredOption('--to <to>', 'self | parent | a direct child’s pid')
    .option('--body <text>')
    .option('--payload <json>')
    .option('--kind <kind>', 'normal | interrupt', 'normal')
    .option('--channel <channel>')
    .option('--correlation-id <id>')
    .option('--reply-to <messageId>')
    .action(
      async (opts: {
        to: string;
        body?: string;
        payload?: string;
        kind: string;
        channel?: string;
        correlationId?: string;
        replyTo?: string;
      }) => {
        const global = program.opts<GlobalOptions>();
        const client = await processClient(global);
        const sent = await client.send({
          to: opts.to,
          kind: parseChoice('kind', messageKindSchema, opts.kind),
          ...(opts.body === undefined ? {} : { body: opts.body }),
          ...(opts.payload === undefined ? {} : { payload: parseJson('--payload', opts.payload) }),
          ...(opts.channel === undefined ? {} : { channel: opts.channel }),
          ...(opts.correlationId === undefined ? {} : { correlation_id: opts.correlationId }),
          ...(opts.replyTo === undefined ? {} : { reply_to: opts.replyTo }),
        });
        emit(global.json, sent, () => sent.message_id);
      },
    );

  program
    .command('inbox')
    .description('read the mailbox of the process of --token/LIBOS_TOKEN (acknowledges what it shows)')
    .option('--all', 'include acknowledged messages')
    .option('--no-ack', 'do not acknowledge')
    .option('--limit <n>', 'at most this many', '20')
    .action(async (opts: { all?: boolean; ack: boolean; limit: string }) => {
      const global = program.opts<GlobalOptions>();
      const client = await processClient(global);
      const page = await client.read({
        include_acked: opts.all ?? false,
        ack: opts.ack,
        limit: Number(opts.limit),
      });
      emit(global.json, page, () => {
        const rows = page.messages.map((m) => [
          m.message_id,
          m.sender,
          m.kind === 'interrupt' ? paint('yellow', m.kind) : m.kind,
          m.channel ?? '',
          m.body ?? (m.payload === null ? '' : JSON.stringify(m.payload)),
        ]);
        const more = page.has_more ? `\n(${page.omitted_count} more; read again to continue)` : '';
        return `${table(['ID', 'FROM', 'KIND', 'CHANNEL', 'BODY'], rows)}${more}`;
      });
    });
}
