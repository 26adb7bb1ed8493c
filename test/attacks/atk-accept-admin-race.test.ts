/**
 * atk-accept: POST /admin/pins/<tool>/accept without a sha256, for a tool with no drift recorded when it looked, passed
 * an empty reviewed map to PinStore.accept: a drift written by another process (a second gateway, `toolgate pin`)
 * between the look and the accept's own read of the file was accepted, bound to nothing. The look and the accept are
 * one synchronous stretch, so the window is microseconds (LOW); the test writes in it through the store's `lock`
 * getter (the look). Now a request without a sha256 accepts nothing (fails on e993371: 200, the unseen drift pinned).
 *
 * A drift rewritten in that window was answered 404 "no drifted definition to accept" (the accept's string[] said
 * nothing of why); now PinStore.accept says what it refused and the drift its read saw, answered as the look's refusal
 * is (400 without a sha256, 409 naming the drift recorded). The status was read from `writeHead`, which `reply` never
 * calls (it sets `statusCode`): `not.toBe(200)` held whatever the answer.
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

/**
 * POST /admin/pins/docs:echo/accept with `body`, `rewrite` writing the lock file anew in the window between the admin
 * API's look at it (the store's `lock` getter) and the accept's own read; the answer's status and body.
 */
async function acceptRacing(
  lock: string,
  body: object,
  rewrite: (seen: PinStore['lock']) => object,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const getter = Object.getOwnPropertyDescriptor(PinStore.prototype, 'lock')!.get!;
  let looks = 0;
  vi.spyOn(PinStore.prototype, 'lock', 'get').mockImplementation(function (this: PinStore) {
    const seen = getter.call(this) as PinStore['lock'];
    if (looks++ === 0) {
      // Another process writes the file now (its mtime made distinct from the read's).
      writeFileSync(lock, JSON.stringify(rewrite(seen)));
      utimesSync(lock, new Date(), new Date(Date.now() + 5_000));
    }
    return seen;
  });
  let sent = '';
  const res = { statusCode: 0, setHeader: () => res, end: (text: string) => ((sent = text), res) };
  const req = Object.assign(Readable.from([Buffer.from(JSON.stringify(body))]), {
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
  await api.handle(req, res as unknown as ServerResponse, '/admin/pins/docs:echo/accept', 'tester', {} as never);
  expect(looks).toBeGreaterThan(0);
  return { status: res.statusCode, body: JSON.parse(sent) as Record<string, unknown> };
}

describe('the admin accept without a sha256', () => {
  it('accepts nothing, even a drift written between its look and its accept', async () => {
    const lock = join(tempDir('atk-accept-admin'), 'policy.lock.json');
    const PINNED = def('Echo');
    writeFileSync(lock, JSON.stringify({ version: 2, tools: { 'docs:echo': entry(PINNED) } }));
    const out = await acceptRacing(lock, {}, (seen) => ({
      ...seen,
      drift: { 'docs:echo': entry(def('Echo. And ~/.ssh')) },
    }));
    const after = JSON.parse(readFileSync(lock, 'utf8')) as { tools: Record<string, { sha256: string }> };
    expect(after.tools['docs:echo']!.sha256).toBe(hashOf(PINNED));
    expect(out.status).toBe(400);
    expect(out.body).toMatchObject({ error: 'sha256_required' });
  });
});

describe('the admin accept of a reviewed sha256', () => {
  it('answers a drift rewritten between its look and its accept as changed, with the drift the accept saw', async () => {
    const lock = join(tempDir('atk-accept-admin'), 'policy.lock.json');
    const PINNED = def('Echo');
    const REVIEWED = def('Echo, politely');
    const LATER = def('Echo. And ~/.ssh');
    writeFileSync(
      lock,
      JSON.stringify({ version: 2, tools: { 'docs:echo': entry(PINNED) }, drift: { 'docs:echo': entry(REVIEWED) } }),
    );
    const out = await acceptRacing(lock, { sha256: hashOf(REVIEWED) }, (seen) => ({
      ...seen,
      drift: { 'docs:echo': entry(LATER) },
    }));
    const after = JSON.parse(readFileSync(lock, 'utf8')) as { tools: Record<string, { sha256: string }> };
    expect(after.tools['docs:echo']!.sha256).toBe(hashOf(PINNED));
    // On main: 404 not_drifted, "no drifted definition to accept", though one was recorded (LATER).
    expect(out.status).toBe(409);
    expect(out.body).toMatchObject({ error: 'definition_changed' });
    expect(out.body['error_description']).toContain(hashOf(LATER));
  });
});
