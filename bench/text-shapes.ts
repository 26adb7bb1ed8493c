/**
 * executeToolCalls of one OpenAI-shaped call to an async no-op tool (README context, 1,000 tools and rules),
 * beside the floor (bench/floor.ts), in two shapes of `function.arguments`: texts that come back (the main
 * bench's `asyncExecuteRepeated` cycles through 1,024 texts, so the gate's JSON-text memo,
 * src/gate/snapshot-text.ts, hits on almost every call) and texts never seen before (what a model's calls mostly
 * are, and what the main bench's `asyncExecute` target times: the memo misses, then rests).
 * Mean ns per call over sequential rounds, median of 5 rounds, each shape alternating; the argument text is
 * built per call in both shapes. `npx tsx bench/text-shapes.ts [calls per round]`.
 */
import { defineTool, PermissionPolicy, ToolRegistry } from '../src/index.js';
import { ARGUMENTS_SCHEMA } from './engines/toolgate.js';
import { floorGate, type FloorRule } from './floor.js';

const N = 1000;
const CALLS = Number(process.argv[2] ?? 100_000);
const names = Array.from({ length: N }, (_, i) => `tool_${i}`);
const registry = new ToolRegistry();
for (const name of names)
  registry.register(defineTool({ name, parameters: ARGUMENTS_SCHEMA, execute: async () => 'ok' }));
registry.setPermissionPolicy(
  new PermissionPolicy({
    rules: names.map((name, i) => ({ name: `allow_${i}`, tools: [name], result: 'allow' as const })),
    fallback: 'deny',
  }),
);
const agent = { name: 'concierge', tools: names };
const floor = floorGate(
  new Map(names.map((name) => [name, async (): Promise<string> => 'ok'])),
  { agent: names, tenant: names, caller: names },
  new Map<string, FloorRule>(names.map((name, i) => [name, { name: `allow_${i}`, effect: 'allow' }])),
);

type Shape = 'floor' | 'repeated' | 'fresh';
let fresh = 0;

async function round(shape: Shape): Promise<number> {
  const started = process.hrtime.bigint();
  for (let k = 0; k < CALLS; k++) {
    const name = names[(k * 7919) % N]!;
    if (shape === 'floor') {
      if ((await floor.invoke(`c${k}`, name, { amount: k % 1000, mode: 'read' })).status !== 'ok')
        throw new Error('text-shapes: the floor refused');
      continue;
    }
    const args = JSON.stringify({ amount: shape === 'fresh' ? 1e6 + fresh++ : k % 1000, mode: 'read' });
    const context = { agent, tenant: { id: 'acme', tools: names }, caller: { id: 'u-7', scopes: names } };
    const [result] = (await registry.executeToolCalls(
      [{ id: `c${k}`, type: 'function', function: { name, arguments: args } }],
      context,
    )) as { content?: unknown }[];
    if (result?.content !== 'ok') throw new Error(`text-shapes: ${JSON.stringify(result)}`);
  }
  return Number(process.hrtime.bigint() - started) / CALLS;
}

const shapes: readonly Shape[] = ['floor', 'repeated', 'fresh'];
for (const shape of shapes) await round(shape);
const runs: Record<Shape, number[]> = { floor: [], repeated: [], fresh: [] };
for (let r = 0; r < 5; r++) for (const shape of shapes) runs[shape].push(await round(shape));
const median = (values: number[]): number => values.slice().sort((a, b) => a - b)[2]!;
const base = median(runs.floor);
for (const shape of shapes)
  console.log(
    `${shape}: ${median(runs[shape]).toFixed(0)} ns a call, ${(median(runs[shape]) / base).toFixed(2)}× the floor`,
  );
