/**
 * Fuzzing the policy-file loader (`parsePolicy`) with the same harness as the call-shape parsers: every
 * input is accepted, or refused with a result that lists its issues (turned into a ConfigurationError
 * here). Seeds: the policies in examples/policies/, plus a few written here.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../../src/index.js';
import { parsePolicy } from '../../src/policy-file/index.js';
import { fuzzText } from './fuzz-harness.js';
import { SEED, size } from './size.js';

const SEEDS = [
  'version: 1\nfallback: deny\nrules:\n  - name: allow_search\n    tools: [search]\n    result: allow\n  - name: ask_refunds\n    tools: [refund]\n    when: { amount: { gt: 100 } }\n    result: ask\n    reason: Refunds over 100 need a human\n',
  JSON.stringify({
    version: 1,
    fallback: 'deny',
    rules: [
      { name: 'allow_search', tools: ['search'], result: 'allow' },
      { name: 'deny_privileged', tags: ['privileged'], result: 'deny' },
    ],
  }),
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

/** The loader under fuzz: the policy-file parser (a refusal is a result listing its issues). */
function findLoader(): (text: string) => unknown {
  return asThrowing((text: string) => parsePolicy(text));
}

const loader = findLoader();

describe('policy-file loader fuzz', () => {
  it('accepts or refuses with a ConfigurationError, never crashes or hangs', async () => {
    const stats = await fuzzText({
      seed: SEED,
      runs: size(500, 20_000),
      seeds: [...SEEDS, ...exampleSeeds()],
      target: loader,
    });
    expect(stats.refused).toBeGreaterThan(0);
    expect(stats.accepted).toBeGreaterThan(0);
  });
});
