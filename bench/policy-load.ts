/**
 * Loading a large policy file (issue 12): a generated YAML file of N tools and N rules (names, tags, a
 * path condition on a third of the rules, reasons), parsed and compiled by `parsePolicy`, as
 * `loadPolicyFile` does after reading the file. Wall time and the process's CPU time, per load.
 */
import { parsePolicy } from '../src/policy-file/index.js';

export interface PolicyLoadResult {
  readonly rules: number;
  readonly bytes: number;
  readonly runs: number;
  readonly msMedian: number;
  readonly cpuMsMedian: number;
  readonly msMin: number;
  readonly msMax: number;
}

/** A policy file of `n` tools and `n` rules, as YAML. */
export function policyText(n: number): string {
  const lines = ['version: 1', 'fallback: deny', 'tools:'];
  for (let i = 0; i < n; i++) lines.push(`  tool_${i}:`, `    tags: [${i % 3 ? 'read_only' : 'destructive'}]`);
  lines.push(
    'agents:',
    '  concierge:',
    `    tools: [${Array.from({ length: Math.min(n, 50) }, (_, i) => `tool_${i}`).join(', ')}]`,
  );
  lines.push('rules:');
  for (let i = 0; i < n; i++) {
    lines.push(`  - name: rule_${i}`, `    result: ${i % 2 ? 'allow' : 'deny'}`, `    tools: tool_${i}`);
    if (i % 3 === 0) lines.push('    when:', `      path: { path: "/data/${i}/**" }`);
    lines.push(`    reason: Rule number ${i}`);
  }
  return `${lines.join('\n')}\n`;
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export function benchPolicyLoad(
  options: { readonly rules?: number; readonly runs?: number; readonly log?: (line: string) => void } = {},
): PolicyLoadResult {
  const n = options.rules ?? 10_000;
  const text = policyText(n);
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let r = 0; r < (options.runs ?? 5); r++) {
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    const result = parsePolicy(text, { file: 'bench.yaml' });
    wall.push(Number(process.hrtime.bigint() - t0) / 1e6);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
    if (!result.ok) throw new Error(`policy load: ${result.issues[0]!.message}`);
    if (result.policy.rules.length !== n)
      throw new Error(`policy load: ${result.policy.rules.length} rules, expected ${n}`);
  }
  const out = {
    rules: n,
    bytes: Buffer.byteLength(text),
    runs: wall.length,
    msMedian: median(wall),
    cpuMsMedian: median(cpu),
    msMin: Math.min(...wall),
    msMax: Math.max(...wall),
  };
  options.log?.(
    `policy file of ${n} rules (${(out.bytes / 1024).toFixed(0)} KiB): median ${out.msMedian.toFixed(0)} ms (CPU ${out.cpuMsMedian.toFixed(0)} ms)`,
  );
  return out;
}
