/**
 * The issues of a value a JSON Schema refused (src/schema.ts), with the work bounded. The verdict's check stops at
 * the first error; every error is listed, as before, by a second check (Ajv's allErrors, compiled on the schema's
 * first failure) run only on a value small enough: its cost grows with the number of errors, which grows with the
 * value and the schema (300,000 empty objects against a `required` of three were 900,000 errors, most of a second
 * of the event loop; an upstream's 150 KB answer held it 5–9 s and 1.5 GB). A larger value is refused with its first
 * error and a note that the others are not listed.
 */
import type { ErrorObject, ValidateFunction } from 'ajv';

/** The most values (objects, arrays and leaves, the root too) of a value whose every issue is listed. */
export const ISSUE_VALUES = 10_000;
/**
 * The most values × schema weight (the values of the schema's own JSON tree) listed in full: a failing value gives at
 * most about one error per keyword (and per `required` name) applied to each of its values, so this bounds the
 * errors of a large schema as ISSUE_VALUES bounds those of a small one (a `required` of 1,000 names and 490 empty
 * objects, 2 KB, were 490,000 issues and 0.6–1.4 s). At most about 50,000 issues: some 15–50 ms of the event loop.
 */
export const ISSUE_WORK = 50_000;

/** The every-error check of a schema, compiled when first needed; undefined when it could not be. */
export type AllErrors = { readonly check: ValidateFunction; readonly weight: number } | undefined;

/**
 * The issues of `value`, which `first` (the verdict check's errors, read before anything else ran) refused. Every
 * issue when `value` is plain data within the limits and `all()` compiles; else the first error's issues and a note.
 * The verdict stands whatever the second check says: should it pass (a value changed in between), the first's.
 */
export function issuesFor(
  first: readonly ErrorObject[] | null | undefined,
  value: unknown,
  all: () => AllErrors,
): string[] {
  const every = issuesOrCheck(first, value, all);
  if (Array.isArray(every)) return every;
  return every(value, NO_CONTEXT) === true ? issuesOf(first) : issuesOf(every.errors);
}

/** The issues of a value `first` refused without the every-error check, or that check when it is to run on it. */
export function issuesOrCheck(
  first: readonly ErrorObject[] | null | undefined,
  value: unknown,
  all: () => AllErrors,
): string[] | ValidateFunction {
  const every = all();
  if (every === undefined) return issuesOf(first);
  const limit = Math.min(ISSUE_VALUES, Math.max(1, Math.floor(ISSUE_WORK / Math.max(1, every.weight))));
  const counted = countValues(value, limit);
  if (counted === 'within') return every.check;
  return [
    ...issuesOf(first),
    counted === 'large'
      ? `further issues are not listed: the value holds more than ${limit} values`
      : 'further issues are not listed: the value is not plain data',
  ];
}

/** What a compiled check is called with (src/schema.ts `NO_CONTEXT`: nothing of its own, Ajv only reads it). */
export const NO_CONTEXT = Object.freeze({}) as Parameters<ValidateFunction>[1];

/** Ajv's errors as the gate words them: `path message`. */
export function issuesOf(errors: readonly ErrorObject[] | null | undefined): string[] {
  return (errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}`);
}

/**
 * Whether `value` holds at most `limit` values, read without running anything of it: own data properties only (an
 * accessor or an inherited enumerable key is 'unread', not called), a cycle counted round until the limit, and
 * whatever a Proxy's trap throws 'unread'. A value's pending children are counted before they are walked, so the
 * walk and its stack are at most `limit` long (an object's keys are listed by `for…in` as Ajv lists them).
 */
export function countValues(value: unknown, limit: number): 'within' | 'large' | 'unread' {
  const counted = valuesIn(value, limit);
  return typeof counted === 'number' ? 'within' : counted;
}

/** How many values `value` holds (see {@link countValues}), or 'large' past `limit`, or 'unread'. */
export function valuesIn(value: unknown, limit: number): number | 'large' | 'unread' {
  try {
    const stack: unknown[] = [value];
    let count = 1;
    while (stack.length > 0) {
      const node = stack.pop();
      if (typeof node !== 'object' || node === null) continue;
      if (Array.isArray(node)) {
        if (count + node.length > limit) return 'large';
        count += node.length;
        for (let i = 0; i < node.length; i++) {
          const own = Object.getOwnPropertyDescriptor(node, i);
          if (own !== undefined && !('value' in own)) return 'unread';
          stack.push(own?.value);
        }
        continue;
      }
      for (const key in node) {
        if (++count > limit) return 'large';
        const own = Object.getOwnPropertyDescriptor(node, key);
        if (own === undefined || !('value' in own)) return 'unread';
        stack.push(own.value);
      }
    }
    return count;
  } catch {
    return 'unread';
  }
}
