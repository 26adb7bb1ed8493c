/**
 * Fuzzing the policy-file loader. The loader is being built on another branch; this file finds it once
 * merged and fuzzes it with the same harness as the call-shape parsers. Until then the test is skipped.
 *
 * To point it at the loader: make sure LOADER_MODULE exports one of LOADER_EXPORTS as a function
 * `(text: string) => policy` that throws ConfigurationError on bad input, or that returns a result
 * `{ ok: false, issues: [...] }` for it (or add its name below). Seeds: the policies in
 * examples/policies/ where there are any, plus a few written here.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../../src/index.js';
import { fuzzText } from './fuzz-harness.js';
import { SEED, size } from './size.js';

const LOADER_MODULE = '../../src/policy-file/index.js';
const LOADER_EXPORTS = ['parsePolicy', 'parsePolicyText', 'loadPolicyText', 'policyFromText', 'loadPolicyString', 'parsePolicyFile'];

const SEEDS = [
  'version: 1\nfallback: deny\nrules:\n  - name: allow_search\n    tools: [search]\n    result: allow\n  - name: ask_refunds\n    tools: [refund]\n    when: { amount: { gt: 100 } }\n    result: ask\n    reason: Refunds over 100 need a human\n',
  JSON.stringify({ version: 1, fallback: 'deny', rules: [{ name: 'allow_search', tools: ['search'], result: 'allow' }, { name: 'deny_privileged', tags: ['privileged'], result: 'deny' }] }),
  'rules: []\n',
  'fallback: ask\nrules:\n  - name: a\n    tags: [read_only]\n    result: allow\n',
];

function exampleSeeds(): string[] {
  const dir = new URL('../../examples/policies/', import.meta.url);
  try {
    return readdirSync(dir)
      .filter((f) => /\.(ya?ml|json)$/.test(f))
      .map((f) => readFileSync(new URL(f, dir), 'utf8'));
  } catch {
    return [];
  }
}

/** A loader that reports bad input as a result is held to the same contract: a refusal lists its issues. */
function asThrowing(load: (text: string) => unknown): (text: string) => unknown {
  return (text) => {
    const result = load(text);
    if (typeof result === 'object' && result !== null && (result as { ok?: unknown }).ok === false) {
      const issues = (result as { issues?: unknown }).issues;
      expect(Array.isArray(issues) && issues.length > 0, 'a refused policy lists its issues').toBe(true);
      throw new ConfigurationError(`refused with ${(issues as unknown[]).length} issue(s)`);
    }
    return result;
  };
}

async function findLoader(): Promise<((text: string) => unknown) | null> {
  let module: Record<string, unknown>;
  try {
    module = (await import(/* @vite-ignore */ LOADER_MODULE)) as Record<string, unknown>;
  } catch {
    return null;
  }
  for (const name of LOADER_EXPORTS) {
    const candidate = module[name];
    if (typeof candidate === 'function') return asThrowing((text: string) => (candidate as (text: string) => unknown)(text));
  }
  return null;
}

const loader = await findLoader();

describe('policy-file loader fuzz', () => {
  it.skipIf(loader === null)('accepts or refuses with a ConfigurationError, never crashes or hangs', async () => {
    const stats = await fuzzText({ seed: SEED, runs: size(500, 20_000), seeds: [...SEEDS, ...exampleSeeds()], target: loader! });
    expect(stats.refused).toBeGreaterThan(0);
    expect(stats.accepted).toBeGreaterThan(0);
  });
});
