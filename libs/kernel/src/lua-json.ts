import { z } from 'zod';

/** Lua's cjson writes an empty list as `{}`: read it back as `[]`. */
export function luaList<T extends z.ZodType>(item: T) {
  return z.preprocess(
    (value) =>
      value !== null && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length === 0
        ? []
        : value,
    z.array(item),
  );
}

/** Lua's cjson writes an empty object as `{}` and cannot tell it from an empty list: accept both. */
export function luaRecord<T extends z.ZodType>(item: T) {
  return z.preprocess(
    (value) => (Array.isArray(value) && value.length === 0 ? {} : value),
    z.record(z.string(), item),
  );
}

export function parseJson(text: string): unknown {
  return JSON.parse(text);
}
