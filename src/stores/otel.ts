/**
 * `toolgate/otel`: every Decision as OpenTelemetry telemetry, through `@opentelemetry/api` (an optional peer;
 * without an SDK registered the API is a no-op). Names follow the GenAI semantic conventions where they name
 * tool calls: a span `execute_tool {gen_ai.tool.name}` (kind INTERNAL) with `gen_ai.operation.name`
 * = `execute_tool`, `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.agent.name`, and `error.type` on a
 * refusal; toolgate's own facts under `toolgate.*`. A counter `toolgate.decisions` counts decisions by
 * effect, stage and layer.
 */
import { metrics, trace, SpanKind, SpanStatusCode, type Attributes, type Meter, type Tracer } from '@opentelemetry/api';
import type { AuditRecord, AuditSink } from './types.js';

/** Options of {@link otelAuditSink}. */
export interface OtelAuditSinkOptions {
  /** @default trace.getTracer('toolgate') */
  readonly tracer?: Tracer;
  /** @default metrics.getMeter('toolgate') */
  readonly meter?: Meter;
  /** Record the call's arguments as `gen_ai.tool.call.arguments` (they may hold personal data). @default false */
  readonly recordArguments?: boolean;
}

/**
 * An audit sink that turns each record into a span and a count.
 *
 * @example
 * import { otelAuditSink } from 'toolgate/otel';
 * const audit = fanOut(new JsonlAuditSink('audit.jsonl'), otelAuditSink());
 */
export function otelAuditSink(options: OtelAuditSinkOptions = {}): AuditSink {
  const tracer = options.tracer ?? trace.getTracer('toolgate');
  const meter = options.meter ?? metrics.getMeter('toolgate');
  const decisions = meter.createCounter('toolgate.decisions', {
    description: 'Tool-call decisions by effect, stage and layer',
    unit: '{decision}',
  });
  const withArgs = options.recordArguments === true;
  return {
    write(record: AuditRecord): void {
      const d = record.decision;
      const attributes: Attributes = {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': d.canonical,
        'gen_ai.tool.call.id': d.callId,
        'gen_ai.agent.name': d.agent,
        'toolgate.decision.effect': d.effect,
        'toolgate.decision.stage': d.stage,
        'toolgate.decision.by': d.by,
        'toolgate.route': record.route,
      };
      if (d.layer !== null) attributes['toolgate.decision.layer'] = d.layer;
      if (d.rule !== null) attributes['toolgate.decision.rule'] = d.rule;
      if (d.tenant !== null) attributes['toolgate.tenant'] = d.tenant;
      if (record.caller !== null) attributes['toolgate.caller'] = record.caller;
      if (d.runId !== null) attributes['toolgate.run.id'] = d.runId;
      if (d.asked !== null) attributes['toolgate.decision.asked'] = d.asked;
      if (d.policyVersion !== null) attributes['toolgate.policy.version'] = d.policyVersion;
      if (record.status !== null) attributes['toolgate.call.status'] = record.status;
      if (withArgs && d.parameters !== null) attributes['gen_ai.tool.call.arguments'] = JSON.stringify(d.parameters);
      const refused = d.effect === 'deny';
      if (refused) attributes['error.type'] = `toolgate.${d.stage}`;
      else if (record.status === 'error') attributes['error.type'] = 'tool_error';
      const at = Date.parse(record.time);
      const span = tracer.startSpan(`execute_tool ${d.canonical}`, {
        kind: SpanKind.INTERNAL,
        attributes,
        ...(Number.isFinite(at) ? { startTime: at } : {}),
      });
      if (refused) span.setStatus({ code: SpanStatusCode.ERROR, message: d.reason });
      else if (record.status === 'error') span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      const counted: Attributes = {
        'toolgate.decision.effect': d.effect,
        'toolgate.decision.stage': d.stage,
        'gen_ai.tool.name': d.canonical,
      };
      if (d.layer !== null) counted['toolgate.decision.layer'] = d.layer;
      decisions.add(1, counted);
    },
  };
}
