import type { FastifyRequest } from 'fastify';
import { HttpRefusal } from './http-errors.js';

/** How deeply JSON may nest inside a body field (`payload`, `input`, …), counted from the field. */
export const MAX_JSON_DEPTH = 256;

/**
 * Checks a parsed JSON body before the schemas see it: a field nested deeper than
 * `MAX_JSON_DEPTH` is refused (the schemas recurse, and deep enough input would exhaust the
 * stack), and so is a `__proto__` key anywhere (the schemas would silently drop it, so the data
 * would not round-trip). `constructor` and `prototype` keys are plain data and pass. The walk is
 * iterative, so any depth is safe to look at.
 */
export function checkBody(body: unknown): void {
  if (body === null || typeof body !== 'object') return;
  const stack: Array<{ value: unknown; path: string[]; depth: number }> = [];
  for (const [key, value] of Object.entries(body)) stack.push({ value, path: [key], depth: 1 });
  if (Object.hasOwn(body, '__proto__')) refuseProto(['__proto__']);
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop()!;
    if (value === null || typeof value !== 'object') continue;
    if (depth > MAX_JSON_DEPTH) {
      const field = `body.${path[0]}`;
      throw new HttpRefusal(
        'invalid_argument',
        `${field}: JSON nested deeper than ${MAX_JSON_DEPTH} levels`,
        undefined,
        { issues: [{ path: field, message: `nested deeper than ${MAX_JSON_DEPTH} levels` }] },
      );
    }
    if (!Array.isArray(value) && Object.hasOwn(value, '__proto__')) refuseProto([...path, '__proto__']);
    const entries = Array.isArray(value) ? value.entries() : Object.entries(value);
    for (const [key, child] of entries)
      if (child !== null && typeof child === 'object')
        stack.push({ value: child, path: [...path, String(key)], depth: depth + 1 });
  }
}

function refuseProto(path: string[]): never {
  const field = ['body', ...path].join('.');
  throw new HttpRefusal(
    'invalid_argument',
    `${field}: the key "__proto__" is not accepted in JSON data (it cannot be stored as a plain key); rename it`,
    undefined,
    { issues: [{ path: field, message: 'the key "__proto__" is not accepted' }] },
  );
}

export async function guardBody(request: FastifyRequest): Promise<void> {
  checkBody(request.body);
}
