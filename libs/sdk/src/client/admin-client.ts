import {
  type AdminMessagesQuery,
  type AdminObjectsQuery,
  type AdminTreeQuery,
  adminMessagesResultSchema,
  adminObjectSchema,
  adminObjectsResultSchema,
  adminTreeResultSchema,
  adminWaitResultSchema,
  type ChildLogPage,
  type CreateRootInput,
  childLogPageSchema,
  createRootResultSchema,
  deleteProcessResultSchema,
  describeResultSchema,
  gcReportSchema,
  type ImageSpecInput,
  imageViewSchema,
  type ListProcessesInput,
  listImagesResultSchema,
  listProcessesResultSchema,
  processViewSchema,
  type Signal,
} from '@libos/protocol';

import { createParser } from 'eventsource-parser';
import { LibosError } from './errors.js';
import { Http, type HttpOptions, isRetryable, type RequestOptions, sleep } from './http.js';

export interface LogQuery {
  /** Default: the process's latest attempt. */
  attempt?: number;
  /** Only lines after this cursor (a page's `next`). */
  after?: string;
  /** Lines per page (1–10000, default 1000). */
  limit?: number;
}

export interface AdminClientOptions extends Omit<HttpOptions, 'token'> {
  /** LIBOS_ADMIN_TOKEN */
  adminToken: string;
}

/** The operator's API: images, root processes, listing and signals. */
export class AdminClient {
  private readonly http: Http;

  constructor(options: AdminClientOptions) {
    this.http = new Http({ ...options, token: options.adminToken });
  }

  async putImage(name: string, spec: ImageSpecInput, options?: RequestOptions) {
    return (await this.http.request('PUT', `/v1/admin/images/${enc(name)}`, imageViewSchema, spec, options))
      .data;
  }
  async getImage(name: string, options?: RequestOptions) {
    return (
      await this.http.request('GET', `/v1/admin/images/${enc(name)}`, imageViewSchema, undefined, options)
    ).data;
  }
  async listImages(options?: RequestOptions) {
    return (await this.http.request('GET', '/v1/admin/images', listImagesResultSchema, undefined, options))
      .data.images;
  }
  /** A root process: `{pid, token, status}`; with `launch: true` a worker runs it. */
  async createProcess(args: CreateRootInput, options?: RequestOptions) {
    return (await this.http.request('POST', '/v1/admin/processes', createRootResultSchema, args, options))
      .data;
  }
  /**
   * Processes newest first: `status`, `root` (one tree), `parent` (direct children), `roots`
   * (only roots), `image`, `created_after` (ISO time or ms); `next_cursor` pages on.
   */
  async listProcesses(query: ListProcessesInput = {}, options?: RequestOptions) {
    const qs = queryString(query);
    return (
      await this.http.request(
        'GET',
        `/v1/admin/processes${qs}`,
        listProcessesResultSchema,
        undefined,
        options,
      )
    ).data;
  }
  async getProcess(pid: string, options?: RequestOptions) {
    return (
      await this.http.request('GET', `/v1/admin/processes/${enc(pid)}`, processViewSchema, undefined, options)
    ).data;
  }
  async signalProcess(pid: string, signal: Signal, reason?: string, options?: RequestOptions) {
    const body = reason === undefined ? { signal } : { signal, reason };
    return (
      await this.http.request(
        'POST',
        `/v1/admin/processes/${enc(pid)}/signal`,
        processViewSchema,
        body,
        options,
      )
    ).data;
  }
  /** Block until any process is terminal (long-polls asked again transparently). */
  async waitProcess(pid: string, options: RequestOptions & { block?: boolean } = {}) {
    const block = options.block ?? true;
    for (let failures = 0; ; ) {
      try {
        const { data } = await this.http.request(
          'POST',
          `/v1/admin/processes/${enc(pid)}/wait`,
          adminWaitResultSchema,
          { block },
          options,
        );
        if (data.ready || !block) return data;
        failures = 0;
      } catch (error) {
        if (!isRetryable(error)) throw error;
        await sleep(Math.min(2000, 50 * 2 ** failures++), options.signal);
      }
    }
  }
  /** Delete a terminal process and its subtree now (`failed_precondition`/`not_terminal` while any of it is live). */
  async deleteProcess(pid: string, options?: RequestOptions) {
    return (
      await this.http.request(
        'DELETE',
        `/v1/admin/processes/${enc(pid)}`,
        deleteProcessResultSchema,
        undefined,
        options,
      )
    ).data;
  }
  /** Run a retention sweep now (what is due in every shard no other coordinator holds). */
  async gc(options?: RequestOptions) {
    return (await this.http.request('POST', '/v1/admin/gc', gcReportSchema, undefined, options)).data;
  }
  /** A process's mailbox, acknowledged and unread (filters of read_process_messages); never acknowledges. */
  async processMessages(pid: string, query: AdminMessagesQuery = {}, options?: RequestOptions) {
    const path = `/v1/admin/processes/${enc(pid)}/messages${queryString(query)}`;
    return (await this.http.request('GET', path, adminMessagesResultSchema, undefined, options)).data;
  }
  /** The objects a process owns or holds, by object number (`after` pages on). */
  async processObjects(pid: string, query: AdminObjectsQuery = {}, options?: RequestOptions) {
    const path = `/v1/admin/processes/${enc(pid)}/objects${queryString(query)}`;
    return (await this.http.request('GET', path, adminObjectsResultSchema, undefined, options)).data;
  }
  /** A process's subtree, breadth-first, siblings in spawn order, at most `max_nodes` nodes. */
  async processTree(pid: string, query: AdminTreeQuery = {}, options?: RequestOptions) {
    const path = `/v1/admin/processes/${enc(pid)}/tree${queryString(query)}`;
    return (await this.http.request('GET', path, adminTreeResultSchema, undefined, options)).data;
  }
  /** Everything about one process: view, attempts, children, result preview, mailbox. */
  async describeProcess(pid: string, options?: RequestOptions) {
    const path = `/v1/admin/processes/${enc(pid)}/describe`;
    return (await this.http.request('GET', path, describeResultSchema, undefined, options)).data;
  }
  /** One page of an attempt's child output (stdout and stderr), oldest first. */
  async readLogs(pid: string, query: LogQuery = {}, options?: RequestOptions): Promise<ChildLogPage> {
    return (
      await this.http.request(
        'GET',
        `/v1/admin/processes/${enc(pid)}/logs${queryString(query)}`,
        childLogPageSchema,
        undefined,
        options,
      )
    ).data;
  }

  /**
   * Pages of an attempt's child output as they come (server-sent events), until its log has
   * ended: the lines so far first, then each batch of new ones. A dropped connection is resumed
   * after the last page seen; refusals (unknown pid, bad attempt) and a coordinator that cannot
   * be reached at first throw at once.
   */
  async *followLogs(
    pid: string,
    query: Omit<LogQuery, 'limit'> = {},
    options: RequestOptions = {},
  ): AsyncGenerator<ChildLogPage> {
    let after = query.after;
    let attempt = query.attempt;
    let resumable = false;
    for (let failures = 0; ; ) {
      const pages: ChildLogPage[] = [];
      let problem: LibosError | undefined;
      const parser = createParser({
        onEvent: (message) => {
          const parsed = childLogPageSchema.safeParse(safeJson(message.data));
          if (parsed.success) pages.push(parsed.data);
          else problem = new LibosError('internal', `unexpected log event: ${parsed.error.message}`, 200);
        },
      });
      try {
        const q = {
          ...(attempt === undefined ? {} : { attempt }),
          ...(after === undefined ? {} : { after }),
        };
        const body = await this.http.stream(
          `/v1/admin/processes/${enc(pid)}/logs${queryString({ ...q, follow: 'true' })}`,
          {},
          options,
        );
        const decoder = new TextDecoder(); // a character may span two chunks
        for await (const chunk of body) {
          parser.feed(decoder.decode(chunk, { stream: true }));
          if (problem) throw problem;
          for (const page of pages.splice(0)) {
            failures = 0;
            resumable = true;
            attempt = page.attempt; // a resume reads the attempt the follow started on
            after = page.next ?? after;
            yield page;
            if (page.ended) return;
          }
        }
      } catch (error) {
        // A refusal ends the follow, and so does a coordinator never reached; a connection that
        // breaks once pages have come (mid-stream too) is resumed.
        if (options.signal?.aborted || (error instanceof LibosError && !isRetryable(error))) throw error;
        if (!resumable) throw error;
      }
      await sleep(Math.min(2000, 50 * 2 ** failures++), options.signal);
    }
  }

  /** Read any object (e.g. a root's result) as the operator. */
  async readObject(oid: string, options?: RequestOptions) {
    return (
      await this.http.request('GET', `/v1/admin/objects/${enc(oid)}`, adminObjectSchema, undefined, options)
    ).data;
  }
}

const enc = encodeURIComponent;

/** `?a=1&b=x` from the defined values (arrays joined with commas), or ''. */
function queryString(query: object): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined) continue;
    params.set(key, Array.isArray(value) ? value.join(',') : String(value));
  }
  return params.size > 0 ? `?${params}` : '';
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
