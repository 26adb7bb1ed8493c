/**
 * `caseInsensitive` path and glob conditions against what case-insensitive file systems treat as one
 * name: each test failed before its fix.
 */
import { describe, expect, it } from 'vitest';
import { parsePolicy } from '../../src/policy-file/index.js';

function policy(rules: string) {
  const result = parsePolicy(`version: 1\nfallback: deny\ntools:\n  t: {}\nrules:\n${rules}`);
  if (!result.ok) throw new Error(result.issues.map((i) => i.message).join('\n'));
  return result.policy;
}

describe('caseInsensitive conditions', () => {
  it('a deny on /srv/private/** meets the dotless ı, which Windows upper-cases to I (NTFS opens prıvate as private)', async () => {
    // Full case folding leaves U+0131 alone (its folding to i is Turkic-only), so "prıvate" was not
    // "private" to the rule; the NTFS and exFAT up-case tables map U+0131 to I, one name with "private".
    const set = policy(
      '  - { name: no-private, result: deny, tools: t, when: { path: { path: "/srv/private/**", caseInsensitive: true } } }\n' +
        '  - { name: rest, result: allow, tools: t }\n',
    );
    const registry = set.registry();
    for (const path of ['/srv/private/key', '/srv/PRIVATE/key', '/srv/pr\u0131vate/key', '/srv/PR\u0131VATE/key'])
      expect((await registry.decide({ name: 't', arguments: { path } })).rule, path).toBe('no-private');
    const glob = policy(
      '  - { name: no-ini, result: deny, tools: t, when: { file: { glob: "*.ini", caseInsensitive: true } } }\n' +
        '  - { name: rest, result: allow, tools: t }\n',
    );
    expect((await glob.registry().decide({ name: 't', arguments: { file: 'desktop.\u0131n\u0131' } })).rule).toBe(
      'no-ini',
    );
  });
});
