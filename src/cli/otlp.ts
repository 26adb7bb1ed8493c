/**
 * OTLP export for `toolgate gateway` when OTEL_EXPORTER_OTLP_ENDPOINT is set: the gateway's tool decisions as
 * the `execute_tool` spans and the `toolgate.decisions` counter of `toolgate/otel` (otelAuditSink), sent
 * over OTLP/HTTP by the OpenTelemetry SDK — optional peers, loaded only then. The exporters read the
 * standard OTEL_* variables (endpoint, headers, OTEL_BSP_SCHEDULE_DELAY); OTEL_METRIC_EXPORT_INTERVAL sets how
 * often counters are sent (default 60 s). The endpoint set but the SDK missing refuses to start: telemetry
 * that was asked for is never silently dropped.
 */
import type { GatewayAuditRecord } from '../gateway/audit.js';

/** The gateway's OTLP export: a sink for its audit records, and its flush at exit. */
export interface OtlpExport {
  readonly sink: (record: GatewayAuditRecord) => void;
  close(): Promise<void>;
}

const PEERS =
  '@opentelemetry/api @opentelemetry/sdk-trace-base @opentelemetry/sdk-metrics @opentelemetry/exporter-trace-otlp-http @opentelemetry/exporter-metrics-otlp-http';

/** The export, or null when OTEL_EXPORTER_OTLP_ENDPOINT is not set. */
export async function otlpExport(env: NodeJS.ProcessEnv = process.env): Promise<OtlpExport | null> {
  if (!env['OTEL_EXPORTER_OTLP_ENDPOINT']) return null;
  let modules;
  try {
    modules = await Promise.all([
      import('@opentelemetry/sdk-trace-base'),
      import('@opentelemetry/sdk-metrics'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/exporter-metrics-otlp-http'),
      import('../stores/otel.js'),
    ]);
  } catch (error) {
    throw new Error(
      `OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry SDK could not be loaded (${error instanceof Error ? error.message : String(error)}): install ${PEERS}`,
      { cause: error },
    );
  }
  const [traceSdk, metricsSdk, traceExporter, metricsExporter, otel] = modules;
  const tracing = new traceSdk.BasicTracerProvider({
    spanProcessors: [new traceSdk.BatchSpanProcessor(new traceExporter.OTLPTraceExporter())],
  });
  const interval = Number(env['OTEL_METRIC_EXPORT_INTERVAL'] ?? 60_000);
  const meters = new metricsSdk.MeterProvider({
    readers: [
      new metricsSdk.PeriodicExportingMetricReader({
        exporter: new metricsExporter.OTLPMetricExporter(),
        exportIntervalMillis: Number.isFinite(interval) && interval > 0 ? interval : 60_000,
      }),
    ],
  });
  const sink = otel.otelAuditSink({ tracer: tracing.getTracer('toolgate'), meter: meters.getMeter('toolgate') });
  return {
    sink(record) {
      if (record.type !== 'tool' || record.decision === null) return;
      const status = record.status === 'unavailable' ? 'refused' : record.status;
      try {
        void sink.write({
          time: record.time,
          route: 'gateway',
          caller: record.caller,
          session: record.session,
          decision: record.decision,
          status: status === 'ok' || status === 'error' || status === 'refused' ? status : null,
        });
      } catch {
        // Telemetry that cannot be made is dropped; the call it describes is not affected.
      }
    },
    async close() {
      await Promise.allSettled([tracing.forceFlush(), meters.forceFlush()]);
      await Promise.allSettled([tracing.shutdown(), meters.shutdown()]);
    },
  };
}
