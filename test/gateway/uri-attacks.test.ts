// Issue 22 (and 21): resource URIs that pass a deny, through the real `toolgate gateway` process. Deny
// `file:///R/secrets/**` then allow `file:///R/**`: a read of `file:///R//secrets/key` returned the secret,
// because the normal form kept the empty segment and the upstream collapsed it. Every variant below is
// refused and never reaches the upstream (the fixture records every request it receives); the allowed
// reads reach it in the collapsed normal form.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditLines, RECORDING, ROOT, stdioUpstream, tempDir, writePolicy } from '../harness.js';

const MAIN = join(ROOT, 'src/cli/main.ts');

const dir = tempDir('uri');
const record = join(dir, 'received.jsonl');
const audit = join(dir, 'audit.jsonl');
writeFileSync(record, '');
const policy = writePolicy(dir, {
  gateway: {
    upstreams: { rec: stdioUpstream(RECORDING, { RECORD: record }) },
    pin: 'off',
  },
  resources: [
    { name: 'no-secrets', uri: 'file:///R/secrets/**', result: 'deny', reason: 'secrets stay upstream' },
    { name: 'no-kb-secrets', uri: 'docs://kb/secret/**', result: 'deny' },
    { name: 'no-keyfile', uri: 'docs://kb/private/keyfile', result: 'deny' },
    { name: 'files', uri: 'file:///R/**', result: 'allow' },
    { name: 'kb', uri: 'docs://kb/**', result: 'allow' },
  ],
});

const received = (): { method: string; uri?: string }[] =>
  readFileSync(record, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { method: string; uri?: string });

let client: Client;
beforeAll(async () => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import', 'tsx', MAIN, 'gateway', '--policy', policy, '--audit', audit],
    stderr: 'pipe',
  });
  client = new Client({ name: 'attacker', version: '1.0.0' });
  await client.connect(transport);
  // The upstream may still be starting on a loaded machine: wait until an allowed read works.
  for (let tries = 0; ; tries++) {
    try {
      await client.readResource({ uri: 'file:///R/data/readme' });
      break;
    } catch (error) {
      if (tries > 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}, 60_000);
afterAll(async () => {
  await client?.close();
});

describe(
  'resource URIs through `toolgate gateway`: one normal form, decided as the upstream reads it',
  { timeout: 60_000 },
  () => {
    const refused = [
      // Empty segments, which the upstream collapses.
      ['file:///R//secrets/key', /no-secrets/],
      ['file:///R/data/..//secrets/key', /no-secrets/],
      ['file:///R/data//../../R/secrets/key', /no-secrets/],
      ['file:////R/secrets//key', /no-secrets/],
      ['docs://kb//secret/keys', /no-kb-secrets/],
      ['docs://kb/public/..//secret//keys', /no-kb-secrets/],
      // The folder itself, with and without its trailing slash.
      ['file:///R/secrets', /no-secrets/],
      ['file:///R/secrets/', /no-secrets/],
      ['docs://kb/secret//', /no-kb-secrets/],
      // An exact deny and its trailing-slash, query and fragment variants.
      ['docs://kb/private/keyfile', /no-keyfile/],
      ['docs://kb/private/keyfile/', /no-keyfile/],
      ['docs://kb/private/keyfile?raw=1', /no-keyfile/],
      ['docs://kb/private/keyfile#top', /no-keyfile/],
      ['docs://kb/private/keyfile/?v=2#x', /no-keyfile/],
      ['docs://kb/private//keyfile?', /no-keyfile/],
      ['file:///R/secrets/key?download=1', /no-secrets/],
      ['file:///R/secrets/key#L1', /no-secrets/],
      // Case and escapes.
      ['docs://KB/private/keyfile', /no-keyfile/],
      ['docs://kb/private/%6Beyfile', /no-keyfile/],
      // What cannot be brought to one normal form safely.
      ['docs://kb/private/keyfile%2F', /encoded slash/],
      ['docs://eve@kb/private/keyfile', /user information/],
      ['docs:kb/../private/keyfile', /"\.\." segment/],
      // Aliases a server may read as another name: a trailing dot or space, "..;", a host's trailing dot,
      // a port a server may ignore.
      ['file:///R/secrets./key', /ending in "\." or a space/],
      ['file:///R/secrets%20/key', /ending in "\." or a space/],
      ['file:///R/secrets /key', /ending in "\." or a space/],
      ['file:///R/x/..;/secrets/key', /dot segment with parameters/],
      ['docs://kb./secret/keys', /no-kb-secrets/],
      ['docs://kb:80/secret/keys', /port/],
    ] as const;

    it.each(refused)('%s is refused and never reaches the upstream', async (uri, why) => {
      const before = received().length;
      await expect(client.readResource({ uri })).rejects.toThrow(why);
      await expect(client.subscribeResource({ uri })).rejects.toThrow();
      expect(received().slice(before)).toEqual([]);
    });

    it('an allowed read reaches the upstream as the collapsed normal form, query and fragment kept', async () => {
      const before = received().length;
      const a = await client.readResource({ uri: 'file:///R//data/./readme' });
      expect(a.contents[0]).toMatchObject({ text: 'content of file:///r/data/readme' });
      await client.readResource({ uri: 'docs://kb/public//intro?lang=en#top' });
      expect(received().slice(before)).toEqual([
        { method: 'resources/read', uri: 'file:///R/data/readme' },
        { method: 'resources/read', uri: 'docs://kb/public/intro?lang=en#top' },
      ]);
      expect(JSON.stringify(received())).not.toContain('TOP SECRET');
    });

    it('each refusal is an audit record carrying the Decision on the gate-level resource call', async () => {
      const deniedOf = (all: Record<string, unknown>[]) =>
        all.filter((r) => r['type'] === 'resource' && r['effect'] === 'deny');
      // Each line is written just after its answer: waited for (the two refusals looked at below).
      const records = await auditLines(audit, (all) =>
        ['docs://kb/private/keyfile?raw=1', 'file:///R/secrets/key'].every((target) =>
          deniedOf(all).some((r) => r['target'] === target),
        ),
      );
      const denied = deniedOf(records);
      const keyfile = denied.find((r) => r['target'] === 'docs://kb/private/keyfile?raw=1');
      expect(keyfile).toMatchObject({
        rule: 'no-keyfile',
        decision: {
          tool: 'resource',
          stage: 'policy',
          parameters: { namespace: 'rec', uri: 'docs://kb/private/keyfile?raw=1', action: 'read' },
        },
      });
      const collapsed = denied.find((r) => r['target'] === 'file:///R/secrets/key');
      expect(collapsed).toMatchObject({ rule: 'no-secrets', reason: 'secrets stay upstream' });
    });
  },
);
