// Attacks on the approval inbox's edges: each test failed before its fix.
import { describe, expect, it } from 'vitest';
import { answerAs, startInbox, wireMoney } from './fixture.js';
import { cleanupsAfterEach } from '../harness.js';

const cleanups = cleanupsAfterEach({ strict: true });

describe('attacks on the approval inbox', () => {
  it('four eyes holds on the registry route: the caller cannot approve their own call', async () => {
    // The registry route put every request with caller null, so four eyes never applied to it.
    const { registry, ran } = wireMoney();
    const { inbox, url } = await startInbox(cleanups, { approvers: { fourEyes: true } });
    registry.setPermissionHandler(inbox.handler({ registry }));
    const calls = registry.executeToolCalls([{ id: 'c1', name: 'wire_money', arguments: { to: 'mallory' } }], {
      agent: 'a',
      caller: { id: 'mallory@example.com' },
    });
    let record;
    while (!(record = (await inbox.store.list({ status: 'pending' }))[0])) await new Promise((r) => setImmediate(r));
    expect(record.caller).toBe('mallory@example.com');
    expect(await answerAs(url, record.id, 'mallory@example.com', { effect: 'allow' })).toBe(403);
    expect(await answerAs(url, record.id, 'ana@example.com', { effect: 'deny' })).toBe(200);
    const [result] = await calls;
    expect(result).toMatchObject({ isError: true });
    expect(ran).toEqual([]);
  });
});
