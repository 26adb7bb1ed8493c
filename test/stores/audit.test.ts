import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { fanOut, JsonlAuditSink } from '../../src/stores/audit.js';
import { MemoryAuditSink } from '../../src/stores/memory.js';
import { otelAuditSink } from '../../src/stores/otel.js';
import type { AuditRecord } from '../../src/stores/types.js';
import type { Decision } from '../../src/decision.js';

const dir = mkdtempSync(join(tmpdir(), 'toolgate-audit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function record(i: number, over: Partial<Record<keyof Decision, unknown>> = {}, caller = 'alice'): AuditRecord {
  return {
    time: new Date(Date.parse('2026-01-01T00:00:00Z') + i * 1000).toISOString(),
    route: 'gateway',
    caller,
    session: null,
    status: 'ok',
    decision: {
      effect: 'allow',
      stage: 'policy',
      by: 'rule',
      layer: null,
      callId: `c${i}`,
      tool: 'Refund',
      canonical: 'refund',
      agent: 'support',
      tenant: 'acme',
      runId: 'R1',
      parameters: { amount: 5 },
      rule: 'allow-small',
      reason: 'small refunds are fine',
      asked: null,
      policyVersion: 'v1',
      ...over,
    } as Decision,
  };
}

describe('JSONL audit', () => {
  it('appends one line per record and finds them by tenant, caller, tool, effect and time; torn lines are skipped', async () => {
    const file = join(dir, 'a.jsonl');
    const sink = new JsonlAuditSink(file);
    sink.write(record(0));
    sink.write(record(1, { effect: 'deny', stage: 'limit', by: 'limit' }, 'bob'));
    appendFileSync(file, '{"torn": \n\n');
    sink.write(record(2, { tenant: 'globex' }));
    expect((await sink.query({})).map((r) => r.decision.callId)).toEqual(['c0', 'c1', 'c2']);
    expect((await sink.query({ caller: 'bob' })).map((r) => r.decision.callId)).toEqual(['c1']);
    expect((await sink.query({ effect: 'allow', tenant: 'acme' })).map((r) => r.decision.callId)).toEqual(['c0']);
    expect((await sink.query({ since: '2026-01-01T00:00:01Z', limit: 1 })).map((r) => r.decision.callId)).toEqual([
      'c2',
    ]);
    await expect(new JsonlAuditSink(join(dir, 'missing.jsonl')).query()).rejects.toThrow(/no audit file/);
  });

  it('reads back a record whose arguments hold U+2028, U+2029 or CR (Node 24 readline split at them: the call was hidden)', async () => {
    const file = join(dir, 'separators.jsonl');
    const sink = new JsonlAuditSink(file);
    sink.write(record(0, { parameters: { note: 'a\u2028b' } }));
    sink.write(record(1, { parameters: { note: 'c\u2029d' }, tool: 'Wire' }));
    sink.write(record(2, { parameters: { note: 'e\rf' } }));
    // Lines ending CRLF (a file copied through Windows) read as before.
    appendFileSync(file, `${JSON.stringify(record(3))}\r\n`);
    const found = await sink.query({});
    expect(found.map((r) => r.decision.callId)).toEqual(['c0', 'c1', 'c2', 'c3']);
    expect(found.map((r) => (r.decision.parameters as { note?: string }).note)).toEqual([
      'a\u2028b',
      'c\u2029d',
      'e\rf',
      undefined,
    ]);
    // A large file in many chunks: every line whole.
    const big = join(dir, 'big.jsonl');
    const many = new JsonlAuditSink(big);
    for (let i = 0; i < 2_000; i++) many.write(record(i, { parameters: { note: `x\u2028${'y'.repeat(i % 97)}` } }));
    expect((await many.query({ limit: 5_000 })).length).toBe(2_000);
  });

  it('fanOut writes to every sink; a failing sink is reported and does not stop the others', async () => {
    const memory = new MemoryAuditSink();
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const broken = {
      write: async () => {
        throw new Error('disk full');
      },
    };
    await fanOut(broken, memory).write(record(0));
    expect(memory.records).toHaveLength(1);
    expect(String(warn.mock.calls[0]?.[0])).toContain('disk full');
    warn.mockRestore();
  });
});

describe('OpenTelemetry (toolgate/otel)', () => {
  it('a span per decision with the GenAI names, and counters by effect / stage / layer', async () => {
    const spans = new InMemorySpanExporter();
    const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }).getTracer('test');
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
    const meterProvider = new MeterProvider({ readers: [reader] });
    const sink = otelAuditSink({ tracer, meter: meterProvider.getMeter('test') });
    sink.write(record(0));
    sink.write(
      record(1, { effect: 'deny', stage: 'allowlist', by: 'allowlist', layer: 'tenant', reason: 'not in plan' }),
    );
    sink.write(
      record(2, { effect: 'deny', stage: 'allowlist', by: 'allowlist', layer: 'tenant', reason: 'not in plan' }),
    );

    const [allowed, denied] = spans.getFinishedSpans();
    expect(allowed?.name).toBe('execute_tool refund');
    expect(allowed?.kind).toBe(SpanKind.INTERNAL);
    expect(allowed?.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'refund',
      'gen_ai.tool.call.id': 'c0',
      'gen_ai.agent.name': 'support',
      'toolgate.decision.effect': 'allow',
      'toolgate.tenant': 'acme',
      'toolgate.caller': 'alice',
    });
    expect(allowed?.attributes['gen_ai.tool.call.arguments']).toBeUndefined();
    expect(denied?.status).toEqual({ code: SpanStatusCode.ERROR, message: 'not in plan' });
    expect(denied?.attributes['error.type']).toBe('toolgate.allowlist');

    await reader.forceFlush();
    const metric = exporter
      .getMetrics()
      .flatMap((m) => m.scopeMetrics)
      .flatMap((s) => s.metrics)
      .find((m) => m.descriptor.name === 'toolgate.decisions');
    const points = metric?.dataPoints.map((p) => [
      p.attributes['toolgate.decision.effect'],
      p.attributes['toolgate.decision.layer'],
      p.value,
    ]);
    expect(points).toEqual(
      expect.arrayContaining([
        ['allow', undefined, 1],
        ['deny', 'tenant', 2],
      ]),
    );
    await meterProvider.shutdown();
  });
});

describe('toolgate audit', () => {
  it('searches a JSONL trail by caller, effect and time; prints JSON lines with --json', async () => {
    const { run } = await import('../../src/cli/program.js');
    const file = join(dir, 'cli.jsonl');
    const sink = new JsonlAuditSink(file);
    sink.write(record(0));
    sink.write(record(1, { effect: 'deny', stage: 'limit', by: 'limit', reason: 'over the limit' }, 'bob'));
    const out: string[] = [];
    const io = { stdout: (t: string) => out.push(t), stderr: (t: string) => out.push(t) };
    expect(await run(['audit', file, '--caller', 'bob'], io)).toBe(0);
    expect(out.join('')).toMatch(/deny\s+limit\s+refund\s+tenant=acme caller=bob agent=support\s+over the limit/);
    out.length = 0;
    expect(await run(['audit', file, '--effect', 'allow', '--json'], io)).toBe(0);
    expect(out.map((l) => (JSON.parse(l) as AuditRecord).decision.callId)).toEqual(['c0']);
    out.length = 0;
    expect(await run(['audit', file, '--since', '2026-01-01T00:00:01Z'], io)).toBe(0);
    expect(out.join('')).not.toContain('c0');
    expect(await run(['audit', file, '--effect', 'maybe'], io)).toBe(2);
    expect(await run(['audit'], io)).toBe(2);
    expect(await run(['audit', join(dir, 'none.jsonl')], io)).toBe(2);
  });
});
