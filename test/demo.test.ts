import { describe, expect, it } from 'vitest';
import { main } from '../examples/demo.js';

describe('npm run demo', () => {
  it('prints every kind of decision with the layer or rule behind it', async () => {
    const lines: string[] = [];
    await main((line) => lines.push(line));
    const out = lines.join('\n');
    expect(out).toMatch(/search_orders .*ALLOW +rule: allow_readonly/);
    expect(out).toMatch(/ALLOW \(approved\) +rule: ask_refunds/);
    expect(out).toMatch(/DENY \(approver said no\) +rule: ask_refunds/);
    expect(out).toMatch(/DENY +rule: deny_privileged/);
    expect(out).toMatch(/REFUSED +layer: not_declared/);
    expect(out).toMatch(/REFUSED +layer: caller/);
    expect(out).toMatch(/REFUSED +layer: tenant/);
    expect(out).toMatch(/DENY +arguments/);
  });
});
