// Attacks on the approval inbox's edges: each test failed before its fix.
import { afterEach, describe, expect, it } from 'vitest';
import { createInbox, jwtApprover } from '../../src/inbox/index.js';
import { PermissionPolicy, PermissionResult, ToolRegistry, defineTool } from '../../src/index.js';
import { INBOX_SECRET, JWT_SECRET, answerAs } from './fixture.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe('attacks on the approval inbox', () => {
  it('four eyes holds on the registry route: the caller cannot approve their own call', async () => {
    // The registry route put every request with caller null, so four eyes never applied to it.
    const ran: unknown[] = [];
    const registry = new ToolRegistry();
    registry.register(
      defineTool({
        name: 'wire_money',
        description: 'Wire money',
        parameters: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
        execute: (a) => {
          ran.push(a);
          return 'sent';
        },
      }),
    );
    registry.setPermissionPolicy(
      new PermissionPolicy({ rules: [{ name: 'ask_wires', tools: ['wire_money'], result: PermissionResult.ASK }] }),
    );
    const inbox = createInbox({
      secret: INBOX_SECRET,
      authenticate: jwtApprover({ secret: JWT_SECRET }),
      approvers: { fourEyes: true },
      sweepIntervalMs: 0,
    });
    cleanups.push(() => inbox.close());
    const server = await inbox.listen({ port: 0 });
    cleanups.push(() => server.close());
    registry.setPermissionHandler(inbox.handler({ registry }));
    const calls = registry.executeToolCalls([{ id: 'c1', name: 'wire_money', arguments: { to: 'mallory' } }], {
      agent: 'a',
      caller: { id: 'mallory@example.com' },
    });
    let record;
    while (!(record = (await inbox.store.list({ status: 'pending' }))[0])) await new Promise((r) => setImmediate(r));
    expect(record.caller).toBe('mallory@example.com');
    expect(await answerAs(server.url, record.id, 'mallory@example.com', { effect: 'allow' })).toBe(403);
    expect(await answerAs(server.url, record.id, 'ana@example.com', { effect: 'deny' })).toBe(200);
    const [result] = await calls;
    expect(result).toMatchObject({ isError: true });
    expect(ran).toEqual([]);
  });
});
