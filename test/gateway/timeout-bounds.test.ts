/**
 * An upstream's timeouts are bounded by Node's longest timer (2^31 - 1 ms; a longer one fires after 1 ms, so a
 * "very long" timeout would time every call out at once on the SDK path, and re-arm shared timers every
 * millisecond): the policy schema and createGateway refuse what Node cannot time, naming the option.
 */
import { describe, expect, it } from 'vitest';
import { createGateway } from '../../src/gateway/index.js';
import { parsePolicy } from '../../src/policy-file/index.js';

const LONGEST_CALL = 2 ** 31 - 1 - 1000; // the gateway's tool timeout is the call's plus 1 s

function gatewayPolicy(upstream: string) {
  return parsePolicy(
    `version: 1\ngateway:\n  upstreams:\n    up: { url: "http://127.0.0.1:9/mcp", ${upstream} }\nrules:\n  - { name: all, result: allow }\n`,
  );
}

describe('upstream timeouts Node can time', () => {
  it('a policy file takes callTimeoutMs up to 2^31 - 1 - 1000 and connectTimeoutMs up to 2^31 - 1, no more', () => {
    expect(gatewayPolicy(`callTimeoutMs: ${LONGEST_CALL}`).ok).toBe(true);
    expect(gatewayPolicy(`connectTimeoutMs: ${2 ** 31 - 1}`).ok).toBe(true);
    for (const [key, ms] of [
      ['callTimeoutMs', LONGEST_CALL + 1],
      ['connectTimeoutMs', 2 ** 31],
    ] as const) {
      const result = gatewayPolicy(`${key}: ${ms}`);
      expect(result.ok).toBe(false);
      if (!result.ok)
        expect(result.issues.map((i) => i.message).join('\n')).toMatch(/2147483647|2147482647|maximum|<=/);
    }
  });

  it('createGateway refuses a callTimeoutMs or connectTimeoutMs Node cannot time, naming it, and connects nothing', async () => {
    const parsed = gatewayPolicy('callTimeoutMs: 1000');
    if (!parsed.ok) throw new Error('the base policy did not load');
    for (const [key, ms] of [
      ['callTimeoutMs', LONGEST_CALL + 1],
      ['callTimeoutMs', 0],
      ['callTimeoutMs', 1.5],
      ['connectTimeoutMs', 2 ** 31],
      ['connectTimeoutMs', Number.NaN],
    ] as const) {
      await expect(
        createGateway({ policy: parsed.policy, upstreams: { up: { url: 'http://127.0.0.1:9/mcp', [key]: ms } } }),
      ).rejects.toThrow(new RegExp(`"${key}" must be an integer from 1 to`));
    }
  });
});
