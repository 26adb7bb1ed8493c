/**
 * A deny on a folder's contents written `dir/*` or `dir/**\/*` (not only `dir/**`) also refuses a call on
 * the folder itself (moving, replacing or deleting `dir` moves every file the rule protects): each test
 * failed before its fix.
 */
import { describe, expect, it } from 'vitest';
import { parsePolicy } from '../../src/policy-file/index.js';

function registry(pattern: string) {
  const result = parsePolicy(
    `version: 1\nfallback: deny\ntools:\n  t: {}\nrules:\n` +
      `  - { name: no-secret, result: deny, tools: t, when: { path: { path: ${JSON.stringify(pattern)} } } }\n` +
      `  - { name: rest, result: allow, tools: t }\n`,
  );
  if (!result.ok) throw new Error(result.issues.map((i) => i.message).join('\n'));
  return result.policy.registry();
}

describe('the folder of a contents pattern', () => {
  for (const pattern of ['/srv/secret/*', '/srv/secret/**/*', '/srv/secret/**', '/srv/{secret,keys}/*']) {
    it(`a deny on ${pattern} refuses a call on /srv/secret itself`, async () => {
      const d = await registry(pattern).decide({ name: 't', arguments: { path: '/srv/secret' } });
      expect(d.effect).toBe('deny');
      expect(d.rule).toBe('no-secret');
      expect(d.reason).toMatch(/is the folder whose contents/);
      // Its contents are denied as before; the parent and a sibling are not the rule's business.
      expect((await registry(pattern).decide({ name: 't', arguments: { path: '/srv/secret/x' } })).rule).toBe(
        'no-secret',
      );
      expect((await registry(pattern).decide({ name: 't', arguments: { path: '/srv/other' } })).rule).toBe('rest');
      expect((await registry(pattern).decide({ name: 't', arguments: { path: '/srv' } })).rule).toBe('rest');
    });
  }
});
