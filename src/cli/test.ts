/**
 * `toolgate test policy.yaml cases.yaml`: policy test cases for CI, like `opa test` or Cerbos's test
 * suites. Each case is a call and who asks, and what is expected: the effect, and optionally the layer
 * that refuses it or the rule that decides. Any mismatch (or a case that cannot be run) exits 1; the
 * report is text, TAP 13 or JUnit XML.
 *
 * ```yaml
 * cases:
 *   - name: the concierge reads the data folder
 *     call: { name: read_file, arguments: { path: /data/a.txt } }
 *     agent: concierge
 *     scopes: [files:read]
 *     expect: { effect: allow, rule: reads }
 *   - name: a tenant without the plan is refused
 *     call: { name: send_email, arguments: { to: a@b.c } }
 *     tenant: free
 *     expect: { effect: deny, layer: tenant }
 * diff:                                   # what a change to the policy may do (toolgate diff)
 *   - name: this change may only narrow
 *     against: policy.main.yaml           # the policy in force, relative to the cases file
 *     may: narrow                         # narrow | widen | none
 * ```
 */
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { parse } from 'yaml';
import { diffPolicies, type PolicyDiff } from '../policy-file/diff/index.js';
import { readPolicyFile } from '../policy-file/load.js';
import type { PolicySet } from '../policy-file/policy-set.js';
import type { ToolCallInput } from '../formats/index.js';
import { previewDecision } from '../policy-file/explain.js';
import type { PolicyContextInput } from '../policy-file/policy-set.js';
import { loadPolicy, readInput, UsageError, type Cli } from './context.js';
import { EXIT, exitCodes, USAGE_LINE } from './exit-codes.js';

/** One case of a cases file. */
export interface PolicyTestCase {
  readonly name: string;
  readonly call: ToolCallInput;
  readonly who: PolicyContextInput;
  readonly expect: {
    readonly effect: 'allow' | 'deny' | 'ask';
    readonly layer?: string | null;
    readonly rule?: string | null;
  };
}

/**
 * A diff expectation: the policy under test compared with the one in force (`against`), and what the change
 * may do — `narrow` (nothing may widen: no region newly allowed or asked, no limit raised, no rule or policy
 * put in shadow, no fallback opened; nothing that may change), `widen` (nothing may narrow), `none`.
 */
export interface PolicyDiffExpectation {
  readonly name: string;
  /** The other policy file, resolved against the cases file's folder. */
  readonly against: string;
  readonly may: 'narrow' | 'widen' | 'none';
}

/** How one case fared. */
export interface PolicyTestResult {
  readonly name: string;
  readonly ok: boolean;
  /** What differed, one line each; empty when it passed. */
  readonly mismatches: readonly string[];
  readonly actual: {
    readonly effect: string;
    readonly layer: string | null;
    readonly rule: string | null;
    readonly reason: string;
  } | null;
}

const EFFECTS = ['allow', 'deny', 'ask'];

/** A cases file: its cases and its diff expectations; a UsageError names the entry and field that is wrong. */
export function parseCasesFile(
  text: string,
  file: string,
): { readonly cases: PolicyTestCase[]; readonly diffs: PolicyDiffExpectation[] } {
  let data: unknown;
  try {
    data = parse(text, { uniqueKeys: true });
  } catch (error) {
    throw new UsageError(`${file} is not YAML or JSON: ${(error as Error).message.split('\n')[0]}`);
  }
  const top = Array.isArray(data) ? null : (data as Record<string, unknown> | null);
  if (top !== null && typeof top === 'object')
    for (const key of Object.keys(top))
      if (key !== 'cases' && key !== 'diff')
        throw new UsageError(`${file}: unknown field ${JSON.stringify(key)}; expected cases or diff`);
  const diffs = parseDiffs(top?.['diff'], file);
  const list = Array.isArray(data) ? data : (top?.['cases'] ?? (diffs.length > 0 ? [] : undefined));
  if (!Array.isArray(list) || (list.length === 0 && diffs.length === 0))
    throw new UsageError(`${file}: expected a non-empty list of cases (or { cases: [...], diff: [...] })`);
  return { cases: list.map((raw, i) => parseCase(raw, i, file)), diffs };
}

function parseDiffs(raw: unknown, file: string): PolicyDiffExpectation[] {
  if (raw === undefined) return [];
  const list = Array.isArray(raw) ? raw : [raw];
  return list.map((d, i) => {
    const at = `${file}: diff[${i}]`;
    if (typeof d !== 'object' || d === null || Array.isArray(d)) throw new UsageError(`${at}: expected a mapping`);
    const e = d as Record<string, unknown>;
    for (const key of Object.keys(e))
      if (!['name', 'against', 'may'].includes(key))
        throw new UsageError(`${at}: unknown field ${JSON.stringify(key)}; expected name, against or may`);
    if (typeof e['against'] !== 'string' || e['against'] === '')
      throw new UsageError(`${at}.against: expected the file name of the policy to compare with`);
    if (!['narrow', 'widen', 'none'].includes(e['may'] as string))
      throw new UsageError(`${at}.may: expected narrow, widen or none, got ${JSON.stringify(e['may'])}`);
    const may = e['may'] as PolicyDiffExpectation['may'];
    return {
      name:
        typeof e['name'] === 'string'
          ? e['name']
          : `the change from ${e['against']} may ${may === 'none' ? 'change nothing' : `only ${may}`}`,
      against: file === '-' ? resolve(e['against']) : resolve(dirname(file), e['against']),
      may,
    };
  });
}

/** What a diff has that an expectation forbids, one line each. */
export function diffMismatches(diff: PolicyDiff, may: PolicyDiffExpectation['may']): string[] {
  const out: string[] = [];
  const forbidden = (d: string): boolean => (may === 'none' ? true : may === 'narrow' ? d !== 'narrow' : d !== 'widen');
  for (const c of diff.changes)
    if (forbidden(c.direction))
      out.push(
        `${c.direction}: ${c.kind} ${c.tool} ${JSON.stringify(c.example.arguments)}${c.example.who.tenant ? ` (tenant ${c.example.who.tenant})` : ''}${c.example.who.agent ? ` (agent ${c.example.who.agent})` : ''}: ${c.old.effect} → ${c.new.effect}`,
      );
  for (const u of diff.uncertain) out.push(`may change: ${u.tool}: ${u.where} (${u.reason})`);
  for (const s of diff.settings) if (forbidden(s.direction)) out.push(`${s.direction}: ${s.text}`);
  return out;
}

function parseCase(raw: unknown, i: number, file: string): PolicyTestCase {
  const at = `${file}: cases[${i}]`;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new UsageError(`${at}: expected a mapping`);
  const c = raw as Record<string, unknown>;
  const known = new Set(['name', 'call', 'agent', 'tenant', 'scopes', 'expect']);
  for (const key of Object.keys(c))
    if (!known.has(key))
      throw new UsageError(`${at}: unknown field ${JSON.stringify(key)}; expected one of ${[...known].join(', ')}`);
  if (typeof c['call'] !== 'object' || c['call'] === null) throw new UsageError(`${at}.call: expected a call object`);
  for (const key of ['agent', 'tenant'] as const)
    if (c[key] !== undefined && typeof c[key] !== 'string') throw new UsageError(`${at}.${key}: expected a string`);
  const scopes = c['scopes'];
  if (scopes !== undefined && !(Array.isArray(scopes) && scopes.every((s) => typeof s === 'string')))
    throw new UsageError(`${at}.scopes: expected a list of strings`);
  const expect = c['expect'] as Record<string, unknown> | undefined;
  if (typeof expect !== 'object' || expect === null)
    throw new UsageError(`${at}.expect: expected { effect, layer?, rule? }`);
  for (const key of Object.keys(expect))
    if (!['effect', 'layer', 'rule'].includes(key))
      throw new UsageError(`${at}.expect: unknown field ${JSON.stringify(key)}; expected effect, layer or rule`);
  if (!EFFECTS.includes(expect['effect'] as string))
    throw new UsageError(`${at}.expect.effect: expected allow, deny or ask, got ${JSON.stringify(expect['effect'])}`);
  for (const key of ['layer', 'rule'] as const)
    if (expect[key] !== undefined && expect[key] !== null && typeof expect[key] !== 'string')
      throw new UsageError(`${at}.expect.${key}: expected a string or null`);
  const call = c['call'] as ToolCallInput;
  const callName = (call as { name?: unknown }).name;
  return {
    name:
      typeof c['name'] === 'string'
        ? c['name']
        : `case ${i + 1}${typeof callName === 'string' ? ` (${callName})` : ''}`,
    call,
    who: {
      ...(typeof c['agent'] === 'string' ? { agent: c['agent'] } : {}),
      ...(typeof c['tenant'] === 'string' ? { tenant: c['tenant'] } : {}),
      ...(Array.isArray(scopes) ? { scopes: scopes as string[] } : {}),
    },
    expect: {
      effect: expect['effect'] as 'allow' | 'deny' | 'ask',
      ...(expect['layer'] !== undefined ? { layer: expect['layer'] as string | null } : {}),
      ...(expect['rule'] !== undefined ? { rule: expect['rule'] as string | null } : {}),
    },
  };
}

async function runDiffExpectation(set: PolicySet, expectation: PolicyDiffExpectation): Promise<PolicyTestResult> {
  const other = await readPolicyFile(expectation.against);
  if (!other.ok)
    return {
      name: expectation.name,
      ok: false,
      mismatches: [
        `${expectation.against} does not load: ${other.issues.map((i) => `${i.file}:${i.line}:${i.column}: ${i.message}`).join('; ')}`,
      ],
      actual: null,
    };
  const mismatches = diffMismatches(await diffPolicies(other.policy, set), expectation.may);
  return { name: expectation.name, ok: mismatches.length === 0, mismatches, actual: null };
}

/** TAP version 13. */
export function tapReport(results: readonly PolicyTestResult[]): string {
  const lines = ['TAP version 13', `1..${results.length}`];
  results.forEach((r, i) => {
    lines.push(`${r.ok ? 'ok' : 'not ok'} ${i + 1} - ${r.name.replace(/#/g, '\\#')}`);
    if (!r.ok) {
      lines.push('  ---', '  message: |');
      for (const m of r.mismatches) lines.push(`    ${m}`);
      if (r.actual) lines.push(`  reason: ${JSON.stringify(r.actual.reason)}`);
      lines.push('  ...');
    }
  });
  return `${lines.join('\n')}\n`;
}

const xml = (text: string): string =>
  text
    .replace(/[<>&"']/g, (ch) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[ch]!)
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '');

/** JUnit XML (one testsuite; a mismatch is a <failure>). */
export function junitReport(results: readonly PolicyTestResult[], suite: string): string {
  const failures = results.filter((r) => !r.ok).length;
  const cases = results.map((r) => {
    const head = `    <testcase classname="${xml(suite)}" name="${xml(r.name)}"`;
    if (r.ok) return `${head}/>`;
    return `${head}>\n      <failure message="${xml(r.mismatches[0] ?? 'mismatch')}">${xml(r.mismatches.join('\n'))}${r.actual ? xml(`\nreason: ${r.actual.reason}`) : ''}</failure>\n    </testcase>`;
  });
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites tests="${results.length}" failures="${failures}">\n  <testsuite name="${xml(suite)}" tests="${results.length}" failures="${failures}">\n${cases.join('\n')}\n  </testsuite>\n</testsuites>\n`;
}

export function registerTest(program: Command, cli: Cli): void {
  const command = program
    .command('test')
    .description(
      'Run policy test cases: each a call and who asks, with the expected effect and optionally the refusing layer or the deciding rule.',
    )
    .argument('<policy>', 'the policy file')
    .argument('<cases>', 'the cases file (YAML or JSON), or - for standard input')
    .option('--format <format>', 'text, tap or junit', 'text')
    .option('--against <file>', 'also compare with this policy file (the one in force), as a diff expectation')
    .option('--may <change>', 'with --against: narrow, widen or none — what the change may do', 'narrow');
  exitCodes(command, [
    [EXIT.OK, 'every case passed'],
    [EXIT.POLICY, 'a case failed, or the policy file was refused'],
    USAGE_LINE,
  ]).action(
    async (policyFile: string, casesFile: string, options: { format: string; against?: string; may: string }) => {
      if (!['text', 'tap', 'junit'].includes(options.format))
        throw new UsageError(`--format must be text, tap or junit, got ${JSON.stringify(options.format)}`);
      if (!['narrow', 'widen', 'none'].includes(options.may))
        throw new UsageError(`--may must be narrow, widen or none, got ${JSON.stringify(options.may)}`);
      const set = await loadPolicy(cli, policyFile, false);
      if (!set) return;
      const { cases, diffs } = parseCasesFile(await readInput(casesFile), casesFile);
      if (options.against !== undefined)
        diffs.push({
          name: `the change from ${options.against} may ${options.may === 'none' ? 'change nothing' : `only ${options.may}`}`,
          against: resolve(options.against),
          may: options.may as PolicyDiffExpectation['may'],
        });
      const registry = set.registry();
      const results: PolicyTestResult[] = [];
      for (const testCase of cases) {
        let actual: PolicyTestResult['actual'];
        try {
          const d = await previewDecision(set, testCase.call, testCase.who, registry);
          actual = { effect: d.effect, layer: d.layer, rule: d.rule, reason: d.reason };
        } catch (error) {
          results.push({
            name: testCase.name,
            ok: false,
            mismatches: [`the case cannot be run: ${(error as Error).message}`],
            actual: null,
          });
          continue;
        }
        const mismatches: string[] = [];
        const { expect } = testCase;
        if (actual.effect !== expect.effect) mismatches.push(`effect: expected ${expect.effect}, got ${actual.effect}`);
        if (expect.layer !== undefined && actual.layer !== expect.layer)
          mismatches.push(`layer: expected ${JSON.stringify(expect.layer)}, got ${JSON.stringify(actual.layer)}`);
        if (expect.rule !== undefined && actual.rule !== expect.rule)
          mismatches.push(`rule: expected ${JSON.stringify(expect.rule)}, got ${JSON.stringify(actual.rule)}`);
        results.push({ name: testCase.name, ok: mismatches.length === 0, mismatches, actual });
      }
      for (const expectation of diffs) results.push(await runDiffExpectation(set, expectation));
      const failed = results.filter((r) => !r.ok).length;
      if (options.format === 'tap') cli.out(tapReport(results));
      else if (options.format === 'junit') cli.out(junitReport(results, policyFile));
      else {
        const { c } = cli;
        for (const r of results) {
          cli.out(`${r.ok ? c.green('pass') : c.red('FAIL')} ${r.name}`);
          for (const m of r.mismatches) cli.out(`     ${m}${r.actual ? ` (${r.actual.reason})` : ''}`);
        }
        cli.out(`${results.length - failed} passed, ${failed} failed`);
      }
      cli.exit(failed > 0 ? EXIT.POLICY : EXIT.OK);
    },
  );
}
