/**
 * `toolgate diff` of two large policy files (issue 26): two generated files of N tools and N rules (exact
 * tool names with path, amount and mode conditions, a few glob, namespace and tag rules, agents and
 * tenants) that differ in ten rules — three results flipped, a bound moved by one, a path narrowed, an allow
 * moved up past a deny, three rules renamed — and a tenant's plan, loaded and diffed as the command does. Wall time per step.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { diffPolicies } from '../src/policy-file/diff/index.js';
import { readPolicyFile } from '../src/policy-file/index.js';

export interface PolicyDiffResult {
  readonly rules: number;
  readonly changedRules: number;
  readonly loadMs: number;
  readonly diffMs: number;
  readonly totalMs: number;
  readonly changes: number;
  readonly uncertain: number;
  readonly searched: number;
}

interface Gen {
  readonly n: number;
  readonly edited: boolean;
}

/** A policy file of `n` tools and `n` rules; `edited` applies the ten changes. */
export function diffPolicyText({ n, edited }: Gen): string {
  const lines = ['version: 1', 'fallback: deny', 'tools:'];
  for (let i = 0; i < n; i++)
    lines.push(`  ${i % 50 === 0 ? 'github:' : ''}tool_${i}:`, `    tags: [${i % 3 ? 'read_only' : 'destructive'}]`);
  const name = (i: number): string => `${i % 50 === 0 ? 'github:' : ''}tool_${i}`;
  lines.push(
    'agents:',
    '  concierge:',
    `    tools: [${Array.from({ length: Math.min(n, 200) }, (_, i) => name(i)).join(', ')}]`,
  );
  lines.push('tenants:');
  for (let t = 0; t < 20; t++) {
    const plan = Array.from({ length: Math.min(n, 100) }, (_, i) => name((i * 7 + t) % n));
    if (edited && t === 3) plan.push(name(999 % n));
    lines.push(`  tenant_${t}: { tools: [${[...new Set(plan)].join(', ')}] }`);
  }
  lines.push('rules:');
  const rules: string[][] = [];
  // A few rules over many tools, first: tags, a namespace, a glob.
  rules.push(['  - name: deny_privileged', '    result: deny', '    tags: [privileged]']);
  rules.push([
    '  - name: github_writes',
    '    result: ask',
    '    namespace: github',
    '    when: { mode: { oneOf: [write, admin] } }',
  ]);
  rules.push([
    '  - name: tool_9_family',
    '    result: ask',
    '    tools: "tool_9*"',
    '    when: { amount: { gt: 5000 } }',
  ]);
  // A deny-then-allow pair on one tool; the edit moves the allow up past the deny.
  const pair = [
    ['  - name: big_transfers', '    result: deny', `    tools: ${name(60)}`, '    when: { amount: { gt: 1000 } }'],
    ['  - name: transfers', '    result: allow', `    tools: ${name(60)}`],
  ];
  rules.push(...(edited ? [pair[1]!, pair[0]!] : pair));
  for (let i = 0; i < n - 5; i++) {
    const r = [`  - name: rule_${i}`];
    let result = i % 2 ? 'allow' : 'deny';
    let gt = 100 + (i % 7);
    let path = `/data/${i}/**`;
    if (edited) {
      if (i === 10) result = 'ask';
      if (i === 22) result = 'allow';
      if (i === 31) gt += 1;
      if (i === 42) path = `/data/${i}/public/**`;
      if (i === 55) result = 'deny';
    }
    r.push(`    result: ${result}`, `    tools: ${name(i)}`);
    if (i % 3 === 0) r.push('    when:', `      path: { path: "${path}" }`);
    else if (i % 3 === 1) r.push('    when:', `      amount: { gt: ${gt} }`);
    r.push(`    reason: Rule number ${i}`);
    rules.push(r);
  }
  if (edited) {
    // Three rules renamed: no change in what is decided.
    for (const k of [70, 71, 72]) {
      const r = rules.find((x) => x[0] === `  - name: rule_${k}`)!;
      r[0] = `  - name: renamed_rule_${k}`;
    }
  }
  for (const r of rules) lines.push(...r);
  return `${lines.join('\n')}\n`;
}

async function loaded(file: string): Promise<Awaited<ReturnType<typeof readPolicyFile>> & { ok: true }> {
  const r = await readPolicyFile(file);
  if (!r.ok) throw new Error(`policy diff bench: ${r.issues[0]!.message}`);
  return r;
}

export async function benchPolicyDiff(
  options: { readonly rules?: number; readonly log?: (line: string) => void } = {},
): Promise<PolicyDiffResult> {
  const n = options.rules ?? 1000;
  // Files on disk, read as `toolgate diff` reads them (the rule lines come from the file's text).
  const dir = mkdtempSync(join(tmpdir(), 'toolgate-diff-bench-'));
  const a = join(dir, 'old.yaml');
  const b = join(dir, 'new.yaml');
  writeFileSync(a, diffPolicyText({ n, edited: false }));
  writeFileSync(b, diffPolicyText({ n, edited: true }));
  const t0 = performance.now();
  const [old, next] = (await Promise.all([loaded(a), loaded(b)])).map((r) => r.policy) as [
    Awaited<ReturnType<typeof loaded>>['policy'],
    Awaited<ReturnType<typeof loaded>>['policy'],
  ];
  const t1 = performance.now();
  const diff = await diffPolicies(old, next, { timeLimitMs: 60_000 });
  const t2 = performance.now();
  rmSync(dir, { recursive: true, force: true });
  if (diff.changes.length === 0) throw new Error('policy diff bench: the edits were not found');
  const result = {
    rules: n,
    changedRules: 10,
    loadMs: t1 - t0,
    diffMs: t2 - t1,
    totalMs: t2 - t0,
    changes: diff.changes.length,
    uncertain: diff.uncertain.length,
    searched: diff.stats.searched,
  };
  options.log?.(
    `policy diff of two ${n.toLocaleString('en')}-rule files differing in 10 rules: ${result.totalMs.toFixed(0)} ms (load ${result.loadMs.toFixed(0)} ms, diff ${result.diffMs.toFixed(0)} ms); ${result.changes} changes, ${result.uncertain} may change, ${result.searched} tools searched`,
  );
  return result;
}
