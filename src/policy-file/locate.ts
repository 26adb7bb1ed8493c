/**
 * Where a policy file's issues are: positions of nodes in its YAML document (built only when asked for)
 * and Ajv's schema errors as positioned issues saying what was expected.
 */
import type { ErrorObject } from 'ajv';
import { isMap, isScalar, LineCounter, parseDocument, type Document, type Node as YamlNode, type Pair } from 'yaml';
import { describe } from '../names.js';
import type { PolicyIssue, PolicyPosition } from './types.js';

export type Segment = string | number;

/**
 * Positions of nodes in one document. The positioned Document (`yaml`, with a LineCounter) costs about
 * ten times the parse itself, so it is built only when a position is asked for: an issue to report, or
 * a rule's position read later (lint, explain).
 */
export class Locator {
  readonly #text: string;
  #parsed: { readonly doc: Document; readonly lines: LineCounter } | undefined;
  readonly file: string;

  constructor(text: string, file: string, parsed?: { readonly doc: Document; readonly lines: LineCounter }) {
    this.#text = text;
    this.#parsed = parsed;
    this.file = file;
  }

  /** The positioned Document, built on first use. */
  parsed(): { readonly doc: Document; readonly lines: LineCounter } {
    return (this.#parsed ??= positioned(this.#text));
  }

  get #doc(): Document {
    return this.parsed().doc;
  }

  get #lines(): LineCounter {
    return this.parsed().lines;
  }

  offset(offset: number): PolicyPosition {
    const { line, col } = this.#lines.linePos(offset);
    return { line: Math.max(line, 1), column: Math.max(col, 1) };
  }

  /** The position of the value at `path`, or of its key with `key`; the nearest existing ancestor otherwise. */
  at(path: readonly Segment[], key = false): PolicyPosition {
    if (key && path.length > 0) {
      const parent = this.#doc.getIn(path.slice(0, -1), true) as YamlNode | undefined;
      if (isMap(parent)) {
        const last = String(path[path.length - 1]);
        const pair = parent.items.find((p: Pair) => isScalar(p.key) && String(p.key.value) === last);
        const range = (pair?.key as YamlNode | undefined)?.range;
        if (range) return this.offset(range[0]);
      }
    }
    for (let n = path.length; n >= 0; n--) {
      const node = (n === 0 ? this.#doc.contents : this.#doc.getIn(path.slice(0, n), true)) as
        YamlNode | null | undefined;
      if (node && typeof node === 'object' && 'range' in node && node.range) return this.offset(node.range[0]);
    }
    return { line: 1, column: 1 };
  }

  issue(path: readonly Segment[], code: string, message: string, key = false): PolicyIssue {
    const where = pathText(path);
    return {
      file: this.file,
      ...this.at(path, key),
      at: where,
      code,
      message: where ? `${where}: ${message}` : message,
    };
  }
}

/** `rules[2].when.path` */
function pathText(path: readonly Segment[]): string {
  let out = '';
  for (const s of path) {
    if (typeof s === 'number') out += `[${s}]`;
    else if (/^[A-Za-z_$][\w$-]*$/.test(s)) out += out === '' ? s : `.${s}`;
    else out += `[${JSON.stringify(s)}]`;
  }
  return out;
}

/** The document as `yaml` reads it, with the positions of its nodes. */
function positioned(text: string): { readonly doc: Document; readonly lines: LineCounter } {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true, strict: true });
  return { doc, lines };
}

function pointerPath(pointer: string): Segment[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^(0|[1-9]\d*)$/.test(s) ? Number(s) : s));
}

/** Ajv errors as positioned issues saying what was expected. */
export function schemaIssues(errors: readonly ErrorObject[], locator: Locator): PolicyIssue[] {
  // A oneOf failure (a pattern that is neither a string nor a list) explains its branches' errors.
  const oneOf = errors.filter((e) => e.keyword === 'oneOf').map((e) => e.instancePath);
  const kept = errors.filter(
    (e) => e.keyword === 'oneOf' || !oneOf.some((p) => e.instancePath === p || e.instancePath.startsWith(`${p}/`)),
  );
  const seen = new Set<string>();
  const issues: PolicyIssue[] = [];
  for (const e of kept) {
    const path = pointerPath(e.instancePath);
    let issue: PolicyIssue;
    const params = e.params as Record<string, unknown>;
    switch (e.keyword) {
      case 'additionalProperties': {
        const prop = String(params['additionalProperty']);
        const known = Object.keys((e.parentSchema as { properties?: object } | undefined)?.properties ?? {});
        issue = locator.issue(
          [...path, prop],
          'schema',
          `unknown property ${JSON.stringify(prop)}; expected one of ${known.join(', ')}`,
          true,
        );
        break;
      }
      case 'required':
        issue = locator.issue(
          path,
          'schema',
          `missing ${JSON.stringify(params['missingProperty'])}; expected it to be given`,
        );
        break;
      case 'propertyNames':
        issue = locator.issue(
          [...path, String(params['propertyName'])],
          'schema',
          'expected a name of 1 to 256 characters',
          true,
        );
        break;
      case 'enum':
        issue = locator.issue(
          path,
          'schema',
          `expected one of ${(params['allowedValues'] as unknown[]).map((v) => JSON.stringify(v)).join(', ')}, got ${describe(e.data)}`,
        );
        break;
      case 'const':
        issue = locator.issue(
          path,
          'schema',
          `expected ${JSON.stringify(params['allowedValue'])}, got ${describe(e.data)}`,
        );
        break;
      case 'type':
        issue = locator.issue(path, 'schema', `expected ${String(params['type'])}, got ${describe(e.data)}`);
        break;
      case 'oneOf':
        issue = locator.issue(
          path,
          'schema',
          `expected a pattern (a string) or a non-empty list of patterns, got ${describe(e.data)}`,
        );
        break;
      case 'minProperties':
        issue = locator.issue(
          path,
          'schema',
          'expected at least one test: exists, equals, oneOf, prefix, glob, path, gt, gte, lt or lte',
        );
        break;
      case 'minLength':
        issue = locator.issue(path, 'schema', 'expected a non-empty string');
        break;
      default:
        issue = locator.issue(
          path,
          'schema',
          `expected a value that ${e.message ?? 'is valid'}, got ${describe(e.data)}`,
        );
    }
    const id = `${issue.line}:${issue.column}:${issue.message}`;
    if (!seen.has(id)) {
      seen.add(id);
      issues.push(issue);
    }
  }
  return issues.sort((a, b) => a.line - b.line || a.column - b.column);
}
