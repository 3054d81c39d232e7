import {
  type AdminMessagesQuery,
  type AdminObjectsQuery,
  type AdminTreeQuery,
  adminMessagesResultSchema,
  adminObjectSchema,
  adminObjectsResultSchema,
  adminTreeResultSchema,
  adminWaitResultSchema,
  type CreateRootInput,
  createRootResultSchema,
  describeResultSchema,
  type ImageSpecInput,
  imageViewSchema,
  type ListProcessesInput,
  listImagesResultSchema,
  listProcessesResultSchema,
  processViewSchema,
  type Signal,
} from '@libos/protocol';

import { Http, type HttpOptions, isRetryable, type RequestOptions, sleep } from './http.js';

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
