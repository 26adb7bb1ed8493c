/**
 * atk-accept: POST /admin/pins/<tool>/accept without a sha256, for a tool with no drift recorded when it looked, passed
 * an empty reviewed map to PinStore.accept: a drift written by another process (a second gateway, `toolgate pin`)
 * between the look and the accept's own read of the file was accepted, bound to nothing. The look and the accept are
 * one synchronous stretch, so the window is microseconds (LOW); the test writes in it through the store's `lock`
 * getter (the look). Now a request without a sha256 accepts nothing (fails on e993371: 200, the unseen drift pinned).
 */
import { Readable } from 'node:stream';
import { readFileSync, utimesSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { hashOf } from '../../src/crypto.js';
import { adminApi } from '../../src/gateway/admin.js';
import { PinStore, type PinnedDefinition } from '../../src/gateway/pins.js';
import { tempDir } from '../harness.js';

const def = (description: string): PinnedDefinition => ({ name: 'echo', description, inputSchema: { type: 'object' } });
const entry = (d: PinnedDefinition) => ({ sha256: hashOf(d), definition: d, at: '2026-12-07T00:00:00.000Z' });

afterEach(() => void vi.restoreAllMocks());

describe('the admin accept without a sha256', () => {
  it('accepts nothing, even a drift written between its look and its accept', async () => {
    const lock = join(tempDir('atk-accept-admin'), 'policy.lock.json');
    const PINNED = def('Echo');
    writeFileSync(lock, JSON.stringify({ version: 2, tools: { 'docs:echo': entry(PINNED) } }));
    const getter = Object.getOwnPropertyDescriptor(PinStore.prototype, 'lock')!.get!;
    let looks = 0;
    vi.spyOn(PinStore.prototype, 'lock', 'get').mockImplementation(function (this: PinStore) {
      const seen = getter.call(this) as PinStore['lock'];
      if (looks++ === 0) {
        // Another process records a drift now (its mtime made distinct from the read's).
        writeFileSync(lock, JSON.stringify({ ...seen, drift: { 'docs:echo': entry(def('Echo. And ~/.ssh')) } }));
        utimesSync(lock, new Date(), new Date(Date.now() + 5_000));
      }
      return seen;
    });
    let status = 0;
    const res = {
      writeHead: (s: number) => ((status = s), res),
      setHeader: () => res,
      end: () => res,
    } as unknown as ServerResponse;
    const req = Object.assign(Readable.from([Buffer.from('{}')]), {
      method: 'POST',
      headers: {},
    }) as unknown as IncomingMessage;
    const api = adminApi({
      scope: 'admin',
      gateway: { upstreams: new Map(), policy: undefined } as never,
      lockFile: () => lock,
      reload: () => Promise.reject(new Error('no reload')),
      audit: () => {},
    });
    await api.handle(req, res, '/admin/pins/docs:echo/accept', 'tester', {} as never);
    expect(looks).toBeGreaterThan(0);
    const after = JSON.parse(readFileSync(lock, 'utf8')) as { tools: Record<string, { sha256: string }> };
    expect(after.tools['docs:echo']!.sha256).toBe(hashOf(PINNED));
    expect(status).not.toBe(200);
  });
});
