import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentRunner, type RunState } from '../../src/index.js';
import { ScriptedModel } from '../../src/runner/index.js';
import { SqliteApprovalStore, SqliteStores } from '../../src/stores/sqlite.js';
import { importGraph, ROOT_ENTRY_PACKAGES } from '../import-graph.js';
import { SECRET, shop } from './fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'toolgate-sqlite-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const concierge = { name: 'concierge', tools: ['search', 'refund'] };

function make(filename: string) {
  const f = shop({ policyVersion: 'v1' });
  const store = new SqliteApprovalStore({ filename });
  const model = new ScriptedModel([
    { toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 500 } }] },
    { toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 500 } }] },
    { text: 'done' },
  ]);
  const runner = new AgentRunner({
    registry: f.registry,
    model,
    approvals: store,
    secret: SECRET,
    handler: () => 'pending',
  });
  return { ...f, store, runner };
}

describe('SqliteApprovalStore (toolgate/sqlite)', () => {
  it('survives a restart: resume with a fresh store on the same file; the ledger stops a second execution', async () => {
    const file = join(dir, 'approvals.db');
    const first = make(file);
    const result = await first.runner.run(concierge, 'refund', { session: 'desk' });
    if (result.status !== 'paused') throw new Error(result.status);
    const wire = JSON.stringify(result.state);
    const decision = JSON.stringify(first.runner.answer(result.pending[0]!, 'allow', { scope: 'run' }));
    first.store.close();

    // "Another process": a new registry, model, runner and store instance on the same file.
    const second = make(file);
    const done = await second.runner.resume(JSON.parse(wire) as RunState, [JSON.parse(decision)]);
    expect(done.status).toBe('completed');
    // The second identical refund in the run was remembered ('run' scope) in the database.
    expect(second.refunds).toHaveLength(2);
    second.store.close();

    const third = make(file);
    const again = await third.runner.resume(JSON.parse(wire) as RunState, [JSON.parse(decision)]);
    expect(again.status).toBe('completed');
    expect(third.refunds).toHaveLength(0);
    expect(again.output).toBe(done.output);
    third.store.close();
  });

  it('is the SqliteStores of toolgate/sqlite under its 0.1 name: every store the runner takes, in one file', () => {
    expect(SqliteApprovalStore).toBe(SqliteStores);
    const store = new SqliteApprovalStore();
    for (const name of ['approvals', 'nonces', 'remembered', 'ledger', 'tallies'] as const)
      expect(typeof store[name]).toBe('object');
    store.close();
  });

  it('uses a database it is given, with a table prefix, and validates its options', async () => {
    const db = new Database(':memory:');
    const store = new SqliteApprovalStore({ database: db, tablePrefix: 'tg_' });
    await store.nonces.consume('x', 60_000);
    expect(db.prepare('SELECT count(*) AS n FROM tg_used_nonces').get()).toEqual({ n: 1 });
    store.close(); // not ours: still open
    expect(db.open).toBe(true);
    db.close();
    expect(() => new SqliteApprovalStore({ tablePrefix: 'x; DROP TABLE y' })).toThrow(/"tablePrefix"/);
  });

  it('the root entry never imports better-sqlite3 (it is an optional peer behind toolgate/sqlite)', () => {
    const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');
    const { files: seen, packages: external } = importGraph(join(root, 'index.ts'));
    expect(seen.has(join(root, 'runner/runner.ts'))).toBe(true);
    expect([...external].filter((name) => !name.startsWith('node:')).sort()).toEqual(ROOT_ENTRY_PACKAGES);
    const pkg = JSON.parse(readFileSync(resolve(root, '../package.json'), 'utf8')) as Record<
      string,
      Record<string, unknown>
    >;
    expect(pkg['peerDependenciesMeta']!['better-sqlite3']).toEqual({ optional: true });
    expect(pkg['exports']!['./sqlite']).toEqual({
      types: './dist/stores/sqlite.d.ts',
      import: './dist/stores/sqlite.js',
    });
  });
});
