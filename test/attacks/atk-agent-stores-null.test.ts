// A call that names no agent binds `agent: null`: the real stores keep the null (PostgreSQL jsonb, SQLite
// text), so the stores' person finds the answered request for that call's retry (it runs once) and for no
// call of the agent named `agent`.
import { describe, expect, it } from 'vitest';
import { storePerson } from '../../src/gateway/approvals.js';
import type { ApprovalStore, NonceStore } from '../../src/stores/types.js';
import { PostgresStores } from '../../src/stores/postgres.js';
import { SqliteStores } from '../../src/stores/sqlite.js';
import { PG_URL, uniqueName } from '../stores/servers.js';
import { refundRequest } from '../gateway/fixtures/approval-routes.js';
import { cleanupsAfterEach } from '../harness.js';

const cleanups = cleanupsAfterEach();
const secret = 'a-secret-of-sixteen-bytes';
const key = new TextEncoder().encode(secret);
const request = (agent: string | null, callId: string) => refundRequest(key, agent, callId, agent ?? 'agent');

const backends: Record<string, () => Promise<{ approvals: ApprovalStore; nonces: NonceStore }>> = {
  postgres: async () => {
    const s = new PostgresStores({ connectionString: PG_URL, schema: uniqueName('atkagent') });
    await s.migrate();
    cleanups.push(async () => {
      await s.dropSchema();
      await s.close();
    });
    return s;
  },
  sqlite: async () => {
    const s = new SqliteStores();
    cleanups.push(() => s.close());
    return s;
  },
};

describe.each(Object.keys(backends))('%s: an answer for a call naming no agent', (name) => {
  it('is kept bound to no agent, runs that call once, and counts for no call of the agent named "agent"', async () => {
    const stores = await backends[name]!();
    const person = (agent: string | null) =>
      storePerson({ store: stores.approvals, nonces: stores.nonces, secret }, { agent }, () => undefined);
    const first = request(null, 'c1');
    expect(await person(null).ask(first)).toMatchObject({ effect: 'deny', waiting: expect.stringContaining(first.id) });
    const stored = (await stores.approvals.get(first.id))!;
    expect(stored.binding.agent).toBeNull();
    expect(stored.agent).toBe('agent');
    expect(await stores.approvals.answer(first.id, { effect: 'allow', approver: 'finance' })).toBe(true);

    // The agent named `agent`: not that call, asked afresh.
    const named = request('agent', 'c2');
    expect(await person('agent').ask(named)).toMatchObject({
      effect: 'deny',
      waiting: expect.stringContaining(named.id),
    });
    // The call naming none: allowed once, then asked afresh.
    expect(await person(null).ask(request(null, 'c3'))).toMatchObject({ effect: 'allow' });
    expect(await person(null).ask(request(null, 'c4'))).toMatchObject({ effect: 'deny', waiting: expect.any(String) });
  });
});
