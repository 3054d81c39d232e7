import { type AuthenticatedCaller, type Kernel, KernelError } from '@libos/kernel';
import {
  ERROR_CODES,
  MESSAGE_TOOLS,
  type Notice,
  noticeSchema,
  type ParsedToolArgs,
  TOOL_NAMES,
  TOOLS,
  type ToolName,
} from '@libos/protocol';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { abortOnClose } from '../abort-on-close.js';
import { ProcessAuth, presentedToken } from '../auth.js';
import type { CallBudget } from '../call-budget.js';
import { HttpRefusal, sendError } from '../http-errors.js';
import type { Launcher } from '../launcher.js';
import type { Metrics } from '../metrics.js';
import { errorResponses } from './responses.js';

const BLOCKING_TOOLS: readonly ToolName[] = [
  'wait_child_process',
  'wait_children',
  'receive_process_messages',
];
/** A tool call can meet any refusal of the kernel (per tool, see the tool's description). */
const toolErrors = errorResponses(
  ERROR_CODES.filter((code) => code !== 'internal'),
  { body: true },
);

/** Refusals after which the caller is still a live, proven process that may learn its notices. */
const NO_NOTICES = new Set(['unauthenticated', 'unavailable', 'internal']);

export interface ToolRouteDeps {
  kernel: Kernel;
  launcher: Launcher;
  metrics: Metrics;
  pollMs: number;
  /** Aborted at shutdown, so open long-polls answer at once. */
  shutdown: AbortSignal;
  /** The calls (and their bodies) held at once, counted once the caller is known. */
  calls: CallBudget;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The process a tool call acts as, proven by its token before the body is looked at. */
    caller?: AuthenticatedCaller;
  }
}

/**
 * `POST /v1/tools/{tool}` for every tool, as the process whose token is presented. Interrupt
 * notices due before a non-message tool and notices due after any call ride on the response.
 */
export async function toolRoutes(app: FastifyInstance, deps: ToolRouteDeps): Promise<void> {
  const { kernel, metrics } = deps;
  const typed = app.withTypeProvider<ZodTypeProvider>();
  // Authentication comes first: a request without a valid token is 401 whatever its body.
  const auth = new ProcessAuth(kernel);
  typed.addHook('onRequest', async (request, reply) => {
    const token = presentedToken(request);
    if (!token) throw new HttpRefusal('unauthenticated', 'a process bearer token is required');
    request.caller = await auth.caller(token);
    request.log = request.log.child({ pid: request.caller.pid });
    deps.calls.take(request, reply, request.caller.pid);
  });
  // A refused call carries the notices due as well (`error.notices`), taken in one script: an
  // interrupt reaches its recipient at its next non-message call even when that call is refused.
  typed.setErrorHandler(async (error, request, reply) => {
    const caller = request.caller;
    const code = error instanceof KernelError || error instanceof HttpRefusal ? error.code : undefined;
    const name = request.routeOptions.url?.slice('/v1/tools/'.length) as ToolName | undefined;
    let notices: Notice[] | undefined;
    if (caller && name && TOOL_NAMES.includes(name) && !(code && NO_NOTICES.has(code))) {
      notices = await kernel
        .takeNoticesOnRefusal(caller.pid, !MESSAGE_TOOLS.includes(name))
        .catch(() => undefined);
    }
    return sendError(error, request, reply, notices);
  });
  for (const name of TOOL_NAMES) {
    const tool = TOOLS[name];
    const response = (tool.result as z.ZodObject).extend({ notices: z.array(noticeSchema).optional() });
    typed.post(
      `/v1/tools/${name}`,
      {
        schema: {
          description: tool.description,
          tags: ['tools'],
          security: [{ bearer: [] }],
          // An absent body is `{}`: tools whose arguments are all optional need none.
          body: z.preprocess((body) => body ?? {}, tool.args),
          response: { 200: response, ...toolErrors },
        },
      },
      async (request, reply) => {
        const caller = request.caller!;
        const blocking = BLOCKING_TOOLS.includes(name);
        if (blocking) metrics.openLongPolls.inc();
        let result: Record<string, unknown>;
        try {
          const options = blocking
            ? { signal: abortOnClose(request, reply, deps.shutdown), pollMs: deps.pollMs }
            : undefined;
          // The body was parsed by the tool's own schema above: the kernel need not parse it again.
          const args = request.body as ParsedToolArgs<typeof name>;
          result = (await kernel.runParsedTool(name, caller, args, options)) as Record<string, unknown>;
        } finally {
          if (blocking) metrics.openLongPolls.dec();
        }
        await afterTool(deps, name, result);
        // Notices due as of the call ride on this answer (taken only now, so a refused call loses
        // none); ones that arrive later ride on the next one.
        const { noticesDue } = caller.proof;
        const notices: Notice[] = [];
        if (noticesDue.interrupt && !MESSAGE_TOOLS.includes(name)) {
          const before = await kernel.takeNotices(caller.pid, 'before');
          if (before) notices.push(before);
        }
        if (noticesDue.normal) {
          const after = await kernel.takeNotices(caller.pid, 'after');
          if (after) notices.push(after);
        }
        return notices.length > 0 ? { ...result, notices } : result;
      },
    );
  }
}

/** A signal that stopped a child before it ran withdraws its queued job. */
async function afterTool(
  deps: ToolRouteDeps,
  name: ToolName,
  result: Record<string, unknown>,
): Promise<void> {
  if (name !== 'signal_child_process') return;
  await withdrawIfQueued(deps, String(result.child_pid), String(result.status));
}

export async function withdrawIfQueued(
  deps: Pick<ToolRouteDeps, 'kernel' | 'launcher'>,
  pid: string,
  status: string,
): Promise<void> {
  if (status !== 'killed' && status !== 'paused') return;
  const view = await deps.kernel.admin.getProcess(pid);
  if (view.driver !== 'worker' || view.image === null) return;
  const image = await deps.kernel.admin.getImage(view.image).catch(() => undefined);
  await deps.launcher.withdraw({ pid, attempt: view.attempt, pool: image?.spec.pool ?? 'default' });
}
