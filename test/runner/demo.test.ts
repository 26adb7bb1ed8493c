import { describe, expect, it } from 'vitest';
import { runnerDemo } from '../../examples/demo/runner.js';
import { docSection } from '../docs/blocks.js';

describe('examples/demo/runner.ts', () => {
  it('runs the runner demo end to end', async () => {
    const lines: string[] = [];
    await runnerDemo((line) => lines.push(line));
    const text = lines.join('\n');
    expect(text).toContain('"concierge says: pricing says: brass lamp: 49 EUR"');
    expect(text).toContain('pricing was shown: quote\n');
    expect(text).toMatch(/refused refund for concierge \(allowlist: tenant\)/);
    expect(text).toContain('status refusal_loop (attempts 3, refusals 3)');
    expect(text).toContain('status paused');
    expect(text).toContain('resumed in a fresh runner: status completed');
    expect(text).toContain('refunds executed in all: 1 (A-1042:250)');
  });
});

describe('the quick start of docs/runner.md', () => {
  it('its quick start is examples/demo/runner-quickstart.ts (type-checked) and runs', async () => {
    const { readFileSync } = await import('node:fs');
    const readme = docSection('docs/runner.md', 'Quick start');
    const example = readFileSync(new URL('../../examples/demo/runner-quickstart.ts', import.meta.url), 'utf8');
    const block = /```ts\n([\s\S]*?)```/.exec(readme)![1]!;
    const body = example.split('\n').slice(1).join('\n').replace("from '../../src/index.js'", "from 'toolgate'");
    expect(block).toBe(body);
    const { quickstart } = await import('../../examples/demo/runner-quickstart.js');
    expect(await quickstart()).toBe('completed: Refunded.');
  });
});
