import { type ErrorCode, errorEnvelopeSchema, HTTP_STATUS_BY_CODE } from '@libos/protocol';

/** What a route takes, for the statuses the HTTP layer itself can answer on it. */
export interface RouteShape {
  /** Path parameters: a too-long one is 414, one that does not percent-decode is 400. */
  params?: boolean;
  /** A JSON body: malformed or too deep is 400, over the limit is 413. */
  body?: boolean;
  /** A query string: a bad one is 400. */
  query?: boolean;
}

/**
 * The error answers a route declares in `/openapi.json`: the codes its handler can refuse with,
 * those the HTTP layer answers on any route (a big header 431, a slow request 408, Redis down
 * 503, a bug 500), and those its shape brings. Each is the `{error: {...}}` envelope.
 */
export function errorResponses(codes: readonly ErrorCode[], shape: RouteShape = {}) {
  const statuses = new Set<number>([408, 431, 500, 503]);
  for (const code of codes) statuses.add(HTTP_STATUS_BY_CODE[code]);
  if (shape.params) statuses.add(400).add(414);
  if (shape.body) statuses.add(400).add(413);
  if (shape.query) statuses.add(400);
  return Object.fromEntries([...statuses].sort().map((status) => [status, errorEnvelopeSchema]));
}
