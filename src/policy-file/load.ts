/**
 * Loading a policy file: YAML or JSON (YAML 1.2 includes JSON; read by js-yaml, and by `yaml` for the
 * line:column of every issue when there is one to report), checked
 * against the published JSON Schema with Ajv, then compiled to the core's PermissionPolicy. A file with
 * any problem is refused whole: every issue is reported with file, line, column and what was expected,
 * and nothing of it is used.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Ajv, type ValidateFunction } from 'ajv';
import { load as loadYaml } from 'js-yaml';
import { ConfigurationError } from '../errors.js';
import { compileLimits } from '../limits/limiter.js';
import { canonical, declaredName, describe } from '../names.js';
import { PermissionPolicy } from '../permissions/policy.js';
import type { PermissionRule } from '../permissions/rule.js';
import { defineTool, type Tool, type ToolMetadataInput } from '../tool.js';
import { jsonSyntaxError, lineColumn } from './json-syntax.js';
import { compileCondition, compileNameGlob, isGlob, runTests, type ConditionTest, type Glob } from './matchers.js';
import { FileRuleInfo, NONE, toPermissionRule } from './rule-info.js';
import { compileItemRules } from './items.js';
import { Locator, schemaIssues, type Segment } from './locate.js';
import { PolicySet, type PolicyRuleInfo } from './policy-set.js';
import type { PolicyFileData, PolicyIssue, PolicyRisk, PolicyToolData } from './types.js';

/** Options of {@link parsePolicy}. */
export interface ParsePolicyOptions {
  /** The file name used in issues. @default '<input>' */
  readonly file?: string;
  /** 'json' parses the text as strict JSON (RFC 8259) first. @default 'json' for a file name ending in .json, else 'yaml' */
  readonly format?: 'yaml' | 'json';
}

/** The outcome of parsing a policy: the compiled policy, or every issue found (and nothing half-loaded). */
export type PolicyParseResult =
  | { readonly ok: true; readonly policy: PolicySet; readonly issues?: never }
  | { readonly ok: false; readonly issues: readonly PolicyIssue[]; readonly policy?: never };

/** A policy file that was refused; `issues` lists every problem with its position. */
export class PolicyFileError extends ConfigurationError {
  override name = 'PolicyFileError';
  readonly issues: readonly PolicyIssue[];

  constructor(issues: readonly PolicyIssue[]) {
    const first = issues.slice(0, 20).map(formatIssue).join('\n');
    const more = issues.length > 20 ? `\n... and ${issues.length - 20} more` : '';
    super(`the policy file was refused (${issues.length} problem${issues.length === 1 ? '' : 's'}):\n${first}${more}`);
    this.issues = Object.freeze([...issues]);
  }
}

/** `file:line:column: message` */
export function formatIssue(issue: PolicyIssue): string {
  return `${issue.file}:${issue.line}:${issue.column}: ${issue.message}`;
}

const SCHEMA_URL = new URL('../../schema/policy.schema.json', import.meta.url);
let validator: ValidateFunction | undefined;

/** The policy file JSON Schema (the same file the package exports as `toolgate/policy.schema.json`). */
export function policySchema(): Record<string, unknown> {
  return JSON.parse(readFileSync(SCHEMA_URL, 'utf8')) as Record<string, unknown>;
}

function schemaValidator(): ValidateFunction {
  validator ??= new Ajv({ allErrors: true, strict: false, verbose: true }).compile(policySchema());
  return validator;
}

/** Reads and compiles a policy file; refuses it whole with a {@link PolicyFileError}. */
export async function loadPolicyFile(file: string): Promise<PolicySet> {
  const result = await readPolicyFile(file);
  if (!result.ok) throw new PolicyFileError(result.issues);
  return result.policy;
}

/** Reads and compiles a policy file without throwing for a broken one (an unreadable file is an issue too). */
export async function readPolicyFile(file: string): Promise<PolicyParseResult> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    return refusedAt(file, 'read', `cannot read the file: ${(error as Error).message}`);
  }
  return parsePolicy(text, { file });
}

/**
 * Parses and compiles a policy from text (YAML or JSON). Never throws for a broken policy: the result
 * lists every issue found.
 *
 * @example
 * const result = parsePolicy(text, { file: 'policy.yaml' });
 * if (!result.ok) for (const issue of result.issues) console.error(formatIssue(issue));
 * else registry.setPermissionPolicy(result.policy.policy);
 */
export function parsePolicy(text: string, options: ParsePolicyOptions = {}): PolicyParseResult {
  if (typeof text !== 'string')
    throw new TypeError(`parsePolicy expects the policy text as a string, got ${describe(text)}`);
  const file = options.file ?? '<input>';
  if (typeof file !== 'string')
    throw new TypeError(`parsePolicy option "file" must be a string, got ${describe(file)}`);
  if ((options.format ?? (/\.json$/i.test(file) ? 'json' : 'yaml')) === 'json') {
    const bad = jsonSyntaxError(text);
    if (bad)
      return {
        ok: false,
        issues: [{ file, ...lineColumn(text, bad.offset), at: '', code: 'json', message: bad.message }],
      };
  }
  // The common case first: a file that loads. js-yaml reads YAML 1.2 (core schema) several times faster
  // than `yaml` builds its positioned Document; positions are only needed when there is something to
  // report, so anything short of a clean load (a syntax error, an alias, a schema or compile issue) is
  // read again below by `yaml`, whose Document gives every issue its line and column.
  let locator = new Locator(text, file);
  const quick = quickData(text);
  if (quick !== undefined) {
    const result = checkAndCompile(quick, locator, text);
    if (result.ok) return result;
  }
  const { doc, lines } = locator.parsed();
  locator = new Locator(text, file, { doc, lines });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      issues: doc.errors.map((e) => ({
        file,
        ...locator.offset(e.pos[0]),
        at: '',
        code: 'yaml',
        message: `${e.message.split('\n')[0]} (${e.code})`,
      })),
    };
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    return refusedAt(file, 'yaml', (error as Error).message);
  }
  return checkAndCompile(data, locator, text);
}

/**
 * The document's data by js-yaml, or undefined where it does not read cleanly: a syntax error, a
 * duplicate key, an unknown tag, an empty or multi-document source, any alias (`yaml` applies its alias
 * cap), or a thrown error of any kind.
 */
function quickData(text: string): unknown {
  try {
    return loadYaml(text, { maxAliases: 0 });
  } catch {
    return undefined;
  }
}

/** A file refused with one issue about the whole of it (placed at its first line). */
function refusedAt(file: string, code: string, message: string): PolicyParseResult {
  return { ok: false, issues: [{ file, line: 1, column: 1, at: '', code, message }] };
}

function checkAndCompile(data: unknown, locator: Locator, text: string): PolicyParseResult {
  const file = locator.file;
  if (data === null || data === undefined) {
    return refusedAt(file, 'schema', 'the document is empty; expected a mapping with at least "version: 1"');
  }
  const validate = schemaValidator();
  if (!validate(data)) return { ok: false, issues: schemaIssues(validate.errors ?? [], locator) };
  return compile(data as PolicyFileData, locator, text);
}

function refuse(): never {
  throw new ConfigurationError('this tool is declared by a policy file only; it decides calls and never runs');
}

/** Checks the names, patterns and tools of a schema-valid file, and builds the policy. */
function compile(data: PolicyFileData, locator: Locator, text: string): PolicyParseResult {
  const issues: PolicyIssue[] = [];
  const tools: Tool[] = [];
  const byForm = new Map<string, string>();
  for (const [name, spec] of Object.entries(data.tools ?? {})) {
    let form: string;
    try {
      form = declaredName(name, 'tool');
    } catch (error) {
      issues.push(locator.issue(['tools', name], 'invalid-name', (error as Error).message, true));
      continue;
    }
    const other = byForm.get(form);
    if (other !== undefined) {
      issues.push(
        locator.issue(
          ['tools', name],
          'canonical-collision',
          `tool ${JSON.stringify(name)} has the canonical form ${JSON.stringify(form)} of tool ${JSON.stringify(other)}; expected one spelling per tool`,
          true,
        ),
      );
      continue;
    }
    byForm.set(form, name);
    spec.risk?.forEach((threshold, i) => {
      for (const [arg, condition] of Object.entries(threshold.when))
        try {
          compileCondition(arg, condition as Record<string, unknown>);
        } catch (error) {
          issues.push(
            locator.issue(['tools', name, 'risk', i, 'when', arg], 'invalid-pattern', (error as Error).message),
          );
        }
    });
    try {
      tools.push(
        defineTool({
          name,
          description: spec.description ?? '',
          parameters: spec.parameters ?? { type: 'object' },
          metadata: toolMetadataOf(spec),
          execute: refuse,
        }),
      );
    } catch (error) {
      issues.push(
        locator.issue(
          spec.parameters ? ['tools', name, 'parameters'] : ['tools', name],
          'invalid-tool',
          (error as Error).message,
        ),
      );
    }
  }
  for (const [agent, spec] of Object.entries(data.agents ?? {}))
    checkNameList(spec.tools, ['agents', agent, 'tools'], `agent ${JSON.stringify(agent)}`, true, locator, issues);
  for (const [tenant, spec] of Object.entries(data.tenants ?? {})) {
    if (spec.tools)
      checkNameList(
        spec.tools,
        ['tenants', tenant, 'tools'],
        `tenant ${JSON.stringify(tenant)}`,
        false,
        locator,
        issues,
      );
  }
  for (const [scope, names] of Object.entries(data.scopes ?? {}))
    checkNameList(names, ['scopes', scope], `scope ${JSON.stringify(scope)}`, false, locator, issues);

  const rules: PermissionRule[] = [];
  const infos: PolicyRuleInfo[] = [];
  const ruleNames = new Map<string, number>();
  (data.rules ?? []).forEach((rule, index) => {
    const before = ruleNames.get(rule.name);
    if (before !== undefined) {
      issues.push(
        locator.issue(
          ['rules', index, 'name'],
          'duplicate-rule',
          `rule name ${JSON.stringify(rule.name)} is already used by rules[${before}]; expected unique rule names`,
        ),
      );
      return;
    }
    ruleNames.set(rule.name, index);
    // Lists and paths are made only where needed: a large file has a rule of one name and no condition
    // thousands of times, and every object a load leaves behind is the scavenger's work.
    let exact: string[] | undefined;
    let globs: Glob[] | undefined;
    const addPattern = (pattern: string, i: number | null): void => {
      const at = (): Segment[] => (i === null ? ['rules', index, 'tools'] : ['rules', index, 'tools', i]);
      // Glob syntax is looked for after canonicalisation, so a full-width "＊" is the "*" it compares as.
      const form = canonical(pattern);
      if (isGlob(form)) {
        try {
          (globs ??= []).push(compileNameGlob(form));
        } catch (error) {
          issues.push(
            locator.issue(
              at(),
              'invalid-pattern',
              `the glob ${JSON.stringify(pattern)} does not compile: ${(error as Error).message}`,
            ),
          );
        }
      } else {
        try {
          (exact ??= []).push(declaredName(pattern, 'tool'));
        } catch (error) {
          issues.push(locator.issue(at(), 'invalid-name', (error as Error).message));
        }
      }
    };
    if (typeof rule.tools === 'string') addPattern(rule.tools, null);
    else if (rule.tools !== undefined) rule.tools.forEach(addPattern);
    let tests: ConditionTest[] | undefined;
    if (rule.when !== undefined)
      for (const [arg, condition] of Object.entries(rule.when)) {
        try {
          (tests ??= []).push(...compileCondition(arg, condition as Record<string, unknown>));
        } catch (error) {
          issues.push(locator.issue(['rules', index, 'when', arg], 'invalid-pattern', (error as Error).message));
        }
      }
    const info = new FileRuleInfo(
      rule,
      index,
      {
        exact: exact ? Object.freeze(exact) : NONE,
        globs: globs ? Object.freeze(globs) : NONE,
        namespace: rule.namespace === undefined ? null : canonical(rule.namespace),
        tests: tests ? Object.freeze(tests) : NONE,
      },
      locator,
    );
    infos.push(info);
    rules.push(toPermissionRule(info));
  });
  if (data.limits) {
    try {
      compileLimits(data.limits);
    } catch (error) {
      // The message names `limits[i].field`: point at that node.
      const m = /^limits\[(\d+)\]\.(\w+)/.exec((error as Error).message);
      issues.push(
        locator.issue(m ? ['limits', Number(m[1]), m[2]!] : ['limits'], 'invalid-limit', (error as Error).message),
      );
    }
  }
  // A tenant's own max of a limit must name a limit of the file (a misspelt name would set nothing).
  const limitNames = new Set((data.limits ?? []).map((l) => l.name));
  for (const [id, tenant] of Object.entries(data.tenants ?? {}))
    for (const name of Object.keys(tenant.limits ?? {}))
      if (!limitNames.has(name))
        issues.push(
          locator.issue(
            ['tenants', id, 'limits', name],
            'invalid-limit',
            `${JSON.stringify(name)} is not a limit of this file; its limits: ${[...limitNames].join(', ') || '(none)'}`,
          ),
        );
  const version = `policy-file-${createHash('sha256').update(text).digest('hex').slice(0, 12)}`;
  // Resource and prompt rules, in the gate's rule form (items.ts).
  const items = compileItemRules(
    data,
    version,
    (p) => locator.at(p),
    (p, code, message) => issues.push(locator.issue([...p], code, message)),
  );
  if (issues.length > 0) return { ok: false, issues: issues.sort((a, b) => a.line - b.line || a.column - b.column) };
  let policy: PermissionPolicy;
  let shadow: PermissionPolicy | null = null;
  try {
    // Shadow rules (or a whole shadow policy) decide in a second policy that is recorded, never enforced:
    // the enforced one leaves them out (a shadow policy enforces no rule and falls back to allow).
    const policyShadow = data.mode === 'shadow';
    const enforced = policyShadow ? [] : rules.filter((_, i) => infos[i]!.data.mode !== 'shadow');
    policy = new PermissionPolicy({
      rules: enforced,
      fallback: policyShadow ? 'allow' : (data.fallback ?? 'deny'),
      version,
    });
    if (policyShadow || enforced.length !== rules.length)
      shadow = new PermissionPolicy({ rules, fallback: data.fallback ?? 'deny', version });
  } catch (error) {
    return { ok: false, issues: [locator.issue(['rules'], 'invalid-rule', (error as Error).message)] };
  }
  return {
    ok: true,
    policy: new PolicySet({
      file: locator.file === '<input>' ? null : locator.file,
      data,
      policy,
      shadow,
      tools,
      rules: infos,
      items,
      positionOf: (p, key) => locator.at(p, key),
    }),
  };
}

/** A tool's metadata as the file states it (what it leaves out, defineTool defaults). */
function toolMetadataOf(spec: PolicyToolData): ToolMetadataInput {
  const metadata: { -readonly [K in keyof ToolMetadataInput]: ToolMetadataInput[K] } = {};
  if (spec.tags) metadata.tags = spec.tags;
  if (spec.customTags) metadata.customTags = spec.customTags;
  if (spec.timeoutMs !== undefined) metadata.timeoutMs = spec.timeoutMs;
  if (spec.concurrencySafe !== undefined) metadata.concurrencySafe = spec.concurrencySafe;
  if (spec.locality) metadata.locality = spec.locality;
  return metadata;
}

function checkNameList(
  names: readonly string[],
  path: Segment[],
  owner: string,
  unique: boolean,
  locator: Locator,
  issues: PolicyIssue[],
): void {
  const seen = new Map<string, string>();
  names.forEach((name, i) => {
    let form: string;
    try {
      form = declaredName(name, owner);
    } catch (error) {
      issues.push(locator.issue([...path, i], 'invalid-name', (error as Error).message));
      return;
    }
    const other = seen.get(form);
    if (unique && other !== undefined && other !== name) {
      issues.push(
        locator.issue(
          [...path, i],
          'canonical-collision',
          `${owner} declares ${JSON.stringify(other)} and ${JSON.stringify(name)}, which have one canonical form ${JSON.stringify(form)}; expected one spelling per tool`,
        ),
      );
    }
    seen.set(form, name);
  });
}

/** How the approval inbox shows one tool's calls: its summary template and its argument risk. */
export interface PolicyToolCard {
  readonly summary?: string;
  /** The highest threshold level whose conditions all hold (a condition that cannot be judged holds), or null. */
  readonly risk?: (parameters: Readonly<Record<string, unknown>>) => PolicyRisk | null;
}

/** What the approval inbox reads of a loaded policy file: cards by tool, and the risk of each rule that sets one. */
export interface PolicyCards {
  readonly tools: Readonly<Record<string, PolicyToolCard>>;
  readonly rules: Readonly<Record<string, PolicyRisk>>;
}

const RISK_ORDER: readonly PolicyRisk[] = ['low', 'medium', 'high'];

function toolRisk(spec: PolicyToolData): PolicyToolCard['risk'] {
  if (!spec.risk?.length) return undefined;
  const thresholds = spec.risk.map((t) => ({
    level: t.level,
    tests: Object.entries(t.when).flatMap(([arg, c]) => compileCondition(arg, c as Record<string, unknown>)),
  }));
  return (parameters) => {
    let found: PolicyRisk | null = null;
    for (const t of thresholds)
      if (
        runTests(t.tests, parameters) !== false &&
        (found === null || RISK_ORDER.indexOf(t.level) > RISK_ORDER.indexOf(found))
      )
        found = t.level;
    return found;
  };
}

/**
 * The approval inbox's view of a policy file (`toolgate serve --policy`): each tool's `summary` template
 * and `risk` thresholds, and each rule's `risk`. The file is one `loadPolicyFile` / `parsePolicy` accepted.
 */
export function policyCards(data: PolicyFileData): PolicyCards {
  const tools: Record<string, PolicyToolCard> = {};
  for (const [name, spec] of Object.entries(data.tools ?? {})) {
    const risk = toolRisk(spec);
    if (spec.summary === undefined && risk === undefined) continue;
    tools[name] = { ...(spec.summary !== undefined ? { summary: spec.summary } : {}), ...(risk ? { risk } : {}) };
  }
  const rules: Record<string, PolicyRisk> = {};
  for (const rule of data.rules ?? []) if (rule.risk !== undefined) rules[rule.name] = rule.risk;
  return { tools, rules };
}
