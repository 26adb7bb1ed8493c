// Attacks on the gateway ("make a tool run, or a resource be read, that the policy refuses"): each test
// failed before its fix.
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ToolListChangedNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { createGateway, gatewayConfigOf, normalResourceUri } from '../../src/gateway/index.js';
import { loadPolicyFile } from '../../src/policy-file/index.js';

const ROOT = process.cwd();
const DOCS = join(ROOT, 'test/gateway/fixtures/docs-server.ts');
const IMPOSTOR = join(ROOT, 'test/gateway/fixtures/impostor-server.ts');
const tsx = (file: string) => ({ command: process.execPath, args: ['--import', 'tsx', file] });
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});
const text = (r: unknown) => ((r as CallToolResult).content[0] as { text: string }).text;

async function start(data: Record<string, unknown>) {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'toolgate-attack-')));
  const file = join(dir, 'policy.yaml');
  writeFileSync(file, stringify({ version: 1, ...data }));
  const set = await loadPolicyFile(file);
  const config = gatewayConfigOf(set);
  const gateway = await createGateway({ policy: set, upstreams: config.upstreams, pins: config.pins });
  cleanups.push(() => gateway.close());
  const [a, b] = InMemoryTransport.createLinkedPair();
  await gateway.createServer().connect(b);
  const client = new Client({ name: 'attacker', version: '1.0.0' });
  await client.connect(a);
  cleanups.push(() => client.close());
  return { client, dir, gateway };
}

describe('attacks on the gateway', { timeout: 120_000 }, () => {
  it('a deny rule on a resource is not dodged by case or by percent-encoding', async () => {
    const { client } = await start({
      gateway: { upstreams: { docs: tsx(DOCS) } },
      resources: [
        { name: 'no-secrets', uri: 'docs://secret/**', result: 'deny' },
        { name: 'rest', result: 'allow' },
      ],
    });
    for (const uri of ['docs://SECRET/keys', 'docs://%73ecret/keys', 'docs://secret/%6Beys', 'DOCS://Secret/keys'])
      await expect(client.readResource({ uri }), uri).rejects.toThrow(/no-secrets/);
    expect(normalResourceUri('docs://%73ecret/%6Beys')).toEqual({ ok: true, uri: 'docs://secret/keys' });
  });

  it("an unprefixed upstream cannot serve a tool under another upstream's namespace", async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'toolgate-attack-fs-')));
    const { client } = await start({
      gateway: {
        // The real fs upstream is down (so the impostor's name is the only one registered).
        upstreams: { fs: { command: join(dir, 'no-such-server') }, evil: { ...tsx(IMPOSTOR), prefix: false } },
      },
      rules: [{ name: 'all', result: 'allow' }],
    });
    const result = await client.callTool({ name: 'fs:write_file', arguments: { path: join(dir, 'x'), content: 'x' } });
    expect(text(result)).not.toBe('the impostor ran');
    expect(text(result)).toMatch(/under another upstream's namespace; refused/);
    expect(text(await client.callTool({ name: 'hello', arguments: {} }))).toBe('hello');
    const listed = (await client.listTools()).tools.filter((t) => t.name === 'fs:write_file');
    expect(listed.every((t) => t.description !== 'Write a file (really)')).toBe(true);
  });

  it('a drifted tool stays refused when its lock entry disappears (only an exact pin clears it)', async () => {
    const { client, dir } = await start({
      gateway: { upstreams: { docs: tsx(DOCS) } },
      rules: [{ name: 'docs', namespace: 'docs', result: 'allow' }],
    });
    const changed = new Promise<void>((resolve) =>
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
    );
    await client.callTool({ name: 'docs:rug_pull', arguments: {} });
    await changed;
    await expect
      .poll(async () => (await client.callTool({ name: 'docs:echo', arguments: { text: 'x' } })).isError)
      .toBe(true);
    writeFileSync(join(dir, 'policy.lock.json'), JSON.stringify({ version: 1, tools: {} }));
    const after = await client.callTool({ name: 'DOCS:Echo', arguments: { text: 'x' } });
    expect(after.isError).toBe(true);
    expect(text(after)).toContain('differs from the one pinned');
  });
});
