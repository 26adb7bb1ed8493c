/**
 * What the AgentRunner adds per model turn (issue 12): runs of N turns, each turn one allowed call to a
 * no-op tool, with a model that answers at once (it only reads the transcript's length), so the time is
 * the runner's and the gate's, not a model's. Per turn = run time / turns; at 10, 100 and 1,000 turns, so
 * the figures also say whether a run's cost is linear in its turns (a transcript copied per turn is not).
 */
import { measureAsync, type MeasureOptions, type Timing } from './measure.js';
import {
  ALLOW_READONLY,
  AgentRunner,
  PermissionPolicy,
  ToolRegistry,
  ToolTag,
  defineTool,
  type Model,
} from '../src/index.js';

export interface RunnerTurnTiming {
  readonly turns: number;
  /** ns per turn (a run's time divided by its turns), p50 over runs */
  readonly perTurn: Timing;
}

export interface RunnerResult {
  readonly byTurns: readonly RunnerTurnTiming[];
  /** registry.invoke of the same call, a context per request, for scale (ns) */
  readonly invoke: Timing;
}

export async function benchRunner(
  options: {
    readonly timing?: MeasureOptions;
    readonly turns?: readonly number[];
    readonly log?: (l: string) => void;
  } = {},
): Promise<RunnerResult> {
  const log = options.log ?? (() => {});
  const registry = new ToolRegistry();
  registry.register(
    defineTool({
      name: 'search',
      parameters: { type: 'object', properties: { q: { type: 'string' } } },
      metadata: { tags: [ToolTag.READ_ONLY] },
      execute: () => 'ok',
    }),
  );
  registry.setPermissionPolicy(new PermissionPolicy({ rules: [ALLOW_READONLY] }));
  const agent = { name: 'a', tools: ['search'] };
  const plan = { tools: ['search'] };
  const byTurns: RunnerTurnTiming[] = [];
  for (const turns of options.turns ?? [10, 100, 1000]) {
    let turn = 0;
    const model: Model = {
      generate: () =>
        ++turn % (turns + 1) !== 0
          ? { toolCalls: [{ id: `c${turn}`, name: 'search', arguments: { q: 'x' } }] }
          : { text: 'done' },
    };
    // A fresh runner (and in-memory store) per sample: the store's ledger keeps every call, and a ledger
    // grown by earlier samples would be timed as the runner's.
    const runnerOf = (): AgentRunner =>
      new AgentRunner({ registry, model, tenants: () => plan, maxIterations: turns + 2 });
    let id = 0;
    const first = await runnerOf().run(agent, 'go', { runId: `probe-${turns}` });
    if (first.attempts !== turns)
      throw new Error(`runner bench: a run of ${turns} turns made ${first.attempts} calls (${first.status})`);
    turn = 0;
    const timing = await measureAsync(
      async (_from, count) => {
        const runner = runnerOf();
        let calls = 0;
        for (let k = 0; k < count; k++)
          calls += (await runner.run(agent, 'go', { runId: `r${turns}-${++id}` })).attempts;
        return calls;
      },
      { ...options.timing, sampleNs: Math.max(options.timing?.sampleNs ?? 200_000, turns * 20_000) },
    );
    const perTurn = {
      ...timing,
      p50: timing.p50 / turns,
      p99: timing.p99 / turns,
      mean: timing.mean / turns,
      min: timing.min / turns,
      max: timing.max / turns,
    };
    byTurns.push({ turns, perTurn });
    log(`runner: ${turns} turns, ${(perTurn.p50 / 1000).toFixed(2)} µs a turn (p50)`);
  }
  // A context per request, as a server builds one (the runner builds its own per run).
  const invoke = await measureAsync(async (_from, count) => {
    let ok = 0;
    for (let k = 0; k < count; k++) {
      const context = { agent, tenant: { id: 't', tools: plan.tools } };
      if ((await registry.invoke('search', { q: 'x' }, context)).status === 'ok') ok++;
    }
    return ok;
  }, options.timing);
  log(`runner: registry.invoke of the same call ${(invoke.p50 / 1000).toFixed(2)} µs`);
  return { byTurns, invoke };
}
