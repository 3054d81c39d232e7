import { Ajv, type ErrorObject } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { textOf } from './text.js';

// The request's `schema` is a promise the child must keep (reference §1.5): an answer that does
// not satisfy it is a failure, named by the validator's path the way `agentAs` names a rejected
// report (`$.items[0].name: must be string`). Ajv, because request schemas are whole JSON Schema
// documents (draft-07 by default, 2020-12 when they say so), `$ref` and `definitions` included.

/** `/items/0/name` → `$.items[0].name`. */
function jsonPath(pointer: string): string {
  if (pointer === '') return '$';
  return pointer
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((key) => {
      if (/^(0|[1-9][0-9]*)$/.test(key)) return `[${key}]`;
      return /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
    })
    .reduce((acc, part) => acc + part, '$');
}

function describe(errors: ErrorObject[]): string {
  return errors
    .map((error) => `${jsonPath(error.instancePath)}: ${error.message ?? error.keyword}`)
    .join('; ');
}

/** Why `value` does not satisfy `schema`, or `undefined` when it does. */
export function schemaProblem(schema: unknown, value: unknown): string | undefined {
  const options = { strict: false, allErrors: true, validateFormats: false } as const;
  const is2020 =
    typeof schema === 'object' &&
    schema !== null &&
    String((schema as { $schema?: unknown }).$schema ?? '').includes('2020-12');
  let validate: ReturnType<Ajv['compile']>;
  try {
    validate = (is2020 ? new Ajv2020(options) : new Ajv(options)).compile(
      schema as Parameters<Ajv['compile']>[0],
    );
  } catch (error) {
    return `the schema cannot be checked: ${textOf(error)}`;
  }
  return validate(value) ? undefined : describe(validate.errors ?? []);
}
