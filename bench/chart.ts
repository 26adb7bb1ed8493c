/**
 * The results as an SVG chart: latency per decision against the number of tools and rules, log-log,
 * one line per engine (p50 solid, p99 dashed), with the 1 µs target. Drawn by Vega-Lite, rendered
 * headless by Vega (no browser, no canvas).
 */
import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';
import type { EngineTiming } from './suite.js';

const LABELS: Record<string, string> = {
  toolgate: 'toolgate',
  naive: 'naive baseline',
  casbin: 'casbin (priority model)',
  cedar: 'cedar-wasm (stateful)',
  floor: 'floor: hand-written gate + async tool (bench/floor.ts)',
  asyncInvoke: 'toolgate invoke + async tool (README shape)',
};

/** The in-process floor and toolgate's invoke of the same async tool, per size (issue 25), as chart lines. */
export interface FloorPoint {
  readonly size: number;
  readonly floor: { readonly p50: number; readonly p99: number };
  readonly asyncInvoke: { readonly p50: number; readonly p99: number };
}

function floorTimings(points: readonly FloorPoint[]): EngineTiming[] {
  return points.flatMap((q) =>
    (['floor', 'asyncInvoke'] as const).map(
      (key) => ({ engine: key, size: q.size, p50: q[key].p50, p99: q[key].p99 }) as unknown as EngineTiming,
    ),
  );
}

export function chartSpec(timings: readonly EngineTiming[]): TopLevelSpec {
  const values = timings.flatMap((t) => [
    { engine: LABELS[t.engine] ?? t.engine, size: t.size, percentile: 'p50', us: t.p50 / 1000 },
    { engine: LABELS[t.engine] ?? t.engine, size: t.size, percentile: 'p99', us: t.p99 / 1000 },
  ]);
  const sizes = [...new Set(timings.map((t) => t.size))].sort((a, b) => a - b);
  const engines = Object.values(LABELS).filter((l) => values.some((v) => v.engine === l));
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: {
      text: 'Latency of one decision against the number of tools and rules',
      subtitle:
        'log-log, lower is better; solid p50, dashed p99 (of batch means where a sample batches many decisions)',
    },
    width: 560,
    height: 340,
    background: 'white',
    layer: [
      {
        data: { values },
        mark: { type: 'line', point: true, strokeWidth: 2 },
        encoding: {
          x: {
            field: 'size',
            type: 'quantitative',
            title: 'tools and rules',
            scale: { type: 'log' },
            axis: { values: sizes, format: ',d' },
          },
          y: {
            field: 'us',
            type: 'quantitative',
            title: 'time per decision',
            scale: { type: 'log' },
            axis: {
              values: [0.1, 1, 10, 100, 1e3, 1e4, 1e5, 1e6],
              labelExpr:
                "datum.value >= 1000 ? format(datum.value / 1000, ',~g') + ' ms' : format(datum.value, '~g') + ' µs'",
            },
          },
          color: {
            field: 'engine',
            type: 'nominal',
            title: 'engine',
            scale: { domain: engines },
            legend: { labelLimit: 0 },
          },
          strokeDash: {
            field: 'percentile',
            type: 'nominal',
            title: 'percentile',
            scale: {
              domain: ['p50', 'p99'],
              range: [
                [1, 0],
                [5, 4],
              ],
            },
            legend: null,
          },
          detail: { field: 'percentile' },
        },
      },
      {
        data: { values: [{ us: 1, label: '1 µs target' }] },
        layer: [
          {
            mark: { type: 'rule', color: '#888', strokeDash: [2, 2] },
            encoding: { y: { field: 'us', type: 'quantitative' } },
          },
          {
            mark: { type: 'text', align: 'left', dx: 4, dy: -7, color: '#666', x: 0 },
            encoding: { y: { field: 'us', type: 'quantitative' }, text: { field: 'label' } },
          },
        ],
      },
    ],
  };
}

export async function chartSvg(timings: readonly EngineTiming[], floors: readonly FloorPoint[] = []): Promise<string> {
  const spec = compile(chartSpec([...timings, ...floorTimings(floors.filter((q) => q.floor !== undefined))])).spec;
  const view = new vega.View(vega.parse(spec), { renderer: 'none' });
  const svg = await view.toSVG();
  view.finalize();
  return svg;
}
