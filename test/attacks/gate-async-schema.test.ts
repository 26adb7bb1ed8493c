/**
 * Attack (issue 25): a JSON Schema with `$async: true` compiles (Ajv) to a check that returns a promise. Read as a
 * boolean, that promise passed every call — the tool ran with arguments its schema refuses, and the rejected
 * promise was left unhandled. The check is awaited now: invalid arguments are refused and the tool does not run;
 * valid ones run.
 */
import { describe, expect, it } from 'vitest';
import { registryWith } from './fixtures/schema-tool.js';

const SCHEMA = {
  $async: true,
  type: 'object',
  properties: { amount: { type: 'integer', minimum: 0 } },
  required: ['amount'],
} as const;

describe('a JSON Schema with $async: true', () => {
  it('refuses arguments the schema refuses, and the tool does not run', async () => {
    const { registry, ran } = registryWith({ ...SCHEMA });
    for (const args of [{ amount: 'all of it' }, { amount: -5 }, {}]) {
      const result = await registry.invoke('pay', args);
      expect(result.status).toBe('refused');
      expect(result.decision).toMatchObject({ effect: 'deny', stage: 'validation', by: 'invalid_arguments' });
    }
    const [batch] = await registry.executeToolCalls([{ id: 'c1', name: 'pay', arguments: '{"amount":"x"}' }]);
    expect(batch).toMatchObject({ isError: true });
    expect(ran).toEqual([]);
  });

  it('names the problems as a synchronous schema does', async () => {
    const { registry } = registryWith({ ...SCHEMA });
    const sync = registryWith({ ...SCHEMA, $async: undefined }).registry;
    const a = await registry.invoke('pay', { amount: 1.5 });
    const b = await sync.invoke('pay', { amount: 1.5 });
    expect(a.decision.reason).toBe(b.decision.reason);
  });

  it('runs valid arguments', async () => {
    const { registry, ran } = registryWith({ ...SCHEMA });
    const result = await registry.invoke('pay', { amount: 3 });
    expect(result).toMatchObject({ status: 'ok', content: 'paid' });
    expect(ran).toEqual([{ amount: 3 }]);
  });
});
