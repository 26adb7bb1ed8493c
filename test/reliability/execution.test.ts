/**
 * The fail-closed matrix as a property: across random registries, policies, handlers that throw, hang or
 * answer garbage, malformed calls and malformed arguments, a tool executes exactly when its Decision is
 * allow, and every Decision equals the one a reference model of the gate computes.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  canonical,
  PermissionPolicy,
  ToolRegistry,
  type Decision,
  type GateContext,
  type PermissionHandler,
  type PermissionResult,
  type PermissionRule,
  type Tool,
} from '../../src/index.js';
import { type ToolCallInput } from '../../src/formats/entry.js';
import { declaration, layer, SPELLINGS, spelledName, STEMS } from './arbitraries.js';
import { fcParams } from './size.js';
import type { MatchKind, RuleSpec } from './rule-spec.js';

const HANDLER_TIMEOUT_MS = 3;

type HandlerKind =
  | 'allow'
  | 'async-allow'
  | 'object-allow'
  | 'deny'
  | 'throws'
  | 'rejects'
  | 'hangs'
  | 'late-allow'
  | 'ask'
  | 'undefined'
  | 'number'
  | 'object';
const HANDLER_KINDS: readonly HandlerKind[] = [
  'allow',
  'async-allow',
  'object-allow',
  'deny',
  'throws',
  'rejects',
  'hangs',
  'late-allow',
  'ask',
  'undefined',
  'number',
  'object',
];
const APPROVING: ReadonlySet<HandlerKind> = new Set(['allow', 'async-allow', 'object-allow']);

function handlerOf(kind: HandlerKind, asked: string[]): PermissionHandler {
  const note = (callId: string): void => {
    asked.push(callId);
  };
  switch (kind) {
    case 'allow':
      return (r) => (note(r.callId), 'allow');
    case 'async-allow':
      return async (r): Promise<PermissionResult> => (note(r.callId), await Promise.resolve(), 'allow');
    case 'object-allow':
      return { handle: (r) => (note(r.callId), 'allow') };
    case 'deny':
      return (r) => (note(r.callId), 'deny');
    case 'throws':
      return (r) => {
        note(r.callId);
        throw new Error('handler exploded');
      };
    case 'rejects':
      return async (r) => {
        note(r.callId);
        throw new Error('handler rejected');
      };
    case 'hangs':
      return (r) => (note(r.callId), new Promise<PermissionResult>(() => undefined));
    case 'late-allow':
      return (r) => (
        note(r.callId),
        new Promise<PermissionResult>((resolve) => setTimeout(() => resolve('allow'), HANDLER_TIMEOUT_MS * 10))
      );
    case 'ask':
      return () => 'ask';
    case 'undefined':
      return (() => undefined) as unknown as PermissionHandler;
    case 'number':
      return (() => 42) as unknown as PermissionHandler;
    case 'object':
      return (() => ({ result: 'allow' })) as unknown as PermissionHandler;
  }
}

const TAGS = ['read_only', 'destructive', 'network'] as const;

const ruleSpec: fc.Arbitrary<RuleSpec> = fc
  .record({
    tools: fc.option(fc.array(spelledName, { minLength: 1, maxLength: 3 }), { nil: undefined }),
    tags: fc.option(fc.array(fc.constantFrom(...TAGS), { minLength: 1, maxLength: 2 }), { nil: undefined }),
    match: fc.constantFrom<MatchKind>('none', 'true', 'false', 'gt', 'throws', 'garbage'),
    threshold: fc.integer({ min: 0, max: 10 }),
    result: fc.constantFrom<PermissionResult>('allow', 'deny', 'ask', 'ask'),
  })
  .map((spec) => (spec.match === 'none' && !spec.tools && !spec.tags ? { ...spec, match: 'true' as const } : spec));

function toRule(spec: RuleSpec, index: number): PermissionRule {
  const rule: { -readonly [K in keyof PermissionRule]: PermissionRule[K] } = { name: `r${index}`, result: spec.result };
  if (spec.tools) rule.tools = spec.tools;
  if (spec.tags) rule.tags = spec.tags;
  if (spec.match === 'true') rule.match = () => true;
  if (spec.match === 'false') rule.match = () => false;
  if (spec.match === 'gt')
    rule.match = (_tool, params) => typeof params['n'] === 'number' && params['n'] > spec.threshold;
  if (spec.match === 'throws') {
    rule.match = () => {
      throw new Error('rule exploded');
    };
  }
  if (spec.match === 'garbage') rule.match = (() => 1) as unknown as NonNullable<PermissionRule['match']>;
  return rule;
}

/** The reference policy loop: allow | deny | ask. */
function referencePolicy(
  specs: readonly RuleSpec[],
  fallback: PermissionResult,
  tool: Tool,
  n: number,
): PermissionResult {
  for (const spec of specs) {
    if (spec.tools && !spec.tools.map(canonical).includes(tool.canonicalName)) continue;
    if (spec.tags && !spec.tags.some((tag) => tool.metadata.allTags.has(tag))) continue;
    if (spec.match === 'throws' || spec.match === 'garbage') return 'deny';
    if (spec.match === 'false' || (spec.match === 'gt' && !(n > spec.threshold))) continue;
    return spec.result;
  }
  return fallback;
}

type ArgsKind =
  | 'object'
  | 'json'
  | 'empty'
  | 'bad-json'
  | 'array'
  | 'null'
  | 'number'
  | 'string'
  | 'wrong-type'
  | 'proto'
  | 'nested'
  | 'missing';
const argsArb = fc.record({
  kind: fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom<ArgsKind>('object', 'json') },
    {
      weight: 2,
      arbitrary: fc.constantFrom<ArgsKind>(
        'empty',
        'bad-json',
        'array',
        'null',
        'number',
        'string',
        'wrong-type',
        'proto',
        'nested',
        'missing',
      ),
    },
  ),
  n: fc.integer({ min: -3, max: 12 }),
});

function rawArgs({ kind, n }: { kind: ArgsKind; n: number }): unknown {
  switch (kind) {
    case 'object':
      return { n };
    case 'json':
      return JSON.stringify({ n });
    case 'empty':
      return '   ';
    case 'bad-json':
      return `{"n": ${n}`;
    case 'array':
      return [n];
    case 'null':
      return null;
    case 'number':
      return n;
    case 'string':
      return 'n';
    case 'wrong-type':
      return { n: String(n) };
    case 'proto':
      return `{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": true}}, "n": ${n}}`;
    case 'nested':
      return { n, deep: JSON.parse('['.repeat(500) + ']'.repeat(500)) as unknown };
    case 'missing':
      return undefined;
  }
}

/** The reference: does the gate see a valid argument object (a record with a numeric n)? */
function validArgs(kind: ArgsKind): boolean {
  // A "__proto__" key is refused at the arguments stage (issue 11): such arguments are not valid.
  return kind === 'object' || kind === 'json' || kind === 'nested';
}

type Shape = 'openai-chat' | 'openai-responses' | 'anthropic' | 'gemini' | 'toolgate' | 'garbage';
const callArb = fc.record({
  shape: fc.constantFrom<Shape>(
    'openai-chat',
    'openai-responses',
    'anthropic',
    'gemini',
    'toolgate',
    'toolgate',
    'garbage',
  ),
  name: fc.oneof({ weight: 5, arbitrary: spelledName }, { weight: 1, arbitrary: fc.string({ maxLength: 6 }) }),
  /** When set, the call names a registered tool (this index, modulo the tool count) in this spelling. */
  registered: fc.option(fc.tuple(fc.nat(), fc.integer({ min: 0, max: SPELLINGS.length - 1 })), {
    nil: undefined,
    freq: 2,
  }),
  args: argsArb,
  garbage: fc.constantFrom<unknown>(
    null,
    42,
    'search',
    [],
    {},
    { type: 'function', function: {} },
    { type: 'tool_use', name: 7 },
    { functionCall: { args: {} } },
  ),
});

interface CallSpec {
  readonly shape: Shape;
  readonly registered: readonly [number, number] | undefined;
  readonly name: string;
  readonly args: { readonly kind: ArgsKind; readonly n: number };
  readonly garbage: unknown;
}

function shapeCall(call: CallSpec, id: string): unknown {
  const args = rawArgs(call.args);
  switch (call.shape) {
    case 'openai-chat':
      return { id, type: 'function', function: { name: call.name, arguments: args } };
    case 'openai-responses':
      return { type: 'function_call', call_id: id, name: call.name, arguments: args };
    case 'anthropic':
      return { type: 'tool_use', id, name: call.name, input: args };
    case 'gemini':
      return { functionCall: { id, name: call.name, args } };
    case 'toolgate':
      return args === undefined ? { id, name: call.name } : { id, name: call.name, arguments: args };
    case 'garbage':
      return call.garbage;
  }
}

const toolArb = fc.record({
  spelling: fc.integer({ min: 0, max: SPELLINGS.length - 1 }),
  schema: fc.constantFrom('json', 'zod', 'zod-async'),
  tags: fc.subarray([...TAGS]),
  concurrencySafe: fc.boolean(),
  throws: fc.boolean(),
});

const scenario = fc.record({
  stems: fc.uniqueArray(fc.constantFrom(...STEMS), { minLength: 1, maxLength: 6 }),
  tools: fc.array(toolArb, { minLength: 6, maxLength: 6 }),
  policy: fc.option(
    fc.record({
      rules: fc.array(ruleSpec, { maxLength: 8 }),
      fallback: fc.constantFrom<PermissionResult>('allow', 'deny', 'ask'),
      handler: fc.option(fc.constantFrom(...HANDLER_KINDS), { nil: undefined }),
    }),
    { nil: null },
  ),
  registryHandler: fc.option(fc.constantFrom(...HANDLER_KINDS), { nil: undefined }),
  noHandlerFallback: fc.constantFrom<PermissionResult>('allow', 'deny', 'ask'),
  agent: fc.option(declaration, { nil: undefined, freq: 1 }),
  tenant: layer,
  caller: layer,
  calls: fc.array(callArb, { maxLength: 8 }),
  route: fc.constantFrom('executeToolCalls', 'dispatch', 'invoke', 'decide'),
});

describe('no tool executes unless its Decision was allow', () => {
  it('holds across random registries, policies, handlers, contexts and calls, on every route', async () => {
    const tally = { calls: 0, allowed: 0, executed: 0 };
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const registry = new ToolRegistry({ handlerTimeoutMs: HANDLER_TIMEOUT_MS, confusables: 'off' });
        const executed: string[] = [];
        const asked: string[] = [];
        const tools = s.stems.map((stem, i) => {
          const t = s.tools[i]!;
          const base = z.object({ n: z.number() });
          const parameters =
            t.schema === 'json'
              ? { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] }
              : t.schema === 'zod'
                ? base
                : base.refine(async () => true);
          return registry.register({
            name: SPELLINGS[t.spelling]!(stem),
            parameters,
            metadata: { tags: t.tags, concurrencySafe: t.concurrencySafe },
            execute: (_args: Record<string, unknown>, execution: { callId: string }) => {
              executed.push(execution.callId);
              if (t.throws) throw new Error('tool failed');
              return 'done';
            },
          });
        });
        // The registry's handler and what `ask` becomes without one.
        if (s.registryHandler)
          registry.setPermissionHandler(handlerOf(s.registryHandler, asked), { fallback: s.noHandlerFallback });
        else {
          registry.setPermissionHandler(() => 'deny', { fallback: s.noHandlerFallback });
          registry.removePermissionHandler();
        }
        if (s.policy) {
          registry.setPermissionPolicy(
            new PermissionPolicy({
              rules: s.policy.rules.map(toRule),
              fallback: s.policy.fallback,
              ...(s.policy.handler ? { handler: handlerOf(s.policy.handler, asked) } : {}),
            }),
          );
        }
        const decided: Decision[] = [];
        registry.onChange((event) => {
          if (event.type === 'tool_decided') decided.push(event.decision);
        });
        const context: GateContext = {
          ...(s.agent ? { agent: { name: 'prop-agent', tools: s.agent } } : {}),
          tenant: { id: 't1', tools: s.tenant },
          caller: { scopes: s.caller },
        };
        // Most calls name a registered tool, in some spelling.
        const calls = s.calls.map((call): CallSpec => {
          if (!call.registered) return call;
          const [index, spelling] = call.registered;
          return { ...call, name: SPELLINGS[spelling]!(s.stems[index % s.stems.length]!) };
        });
        const raw = calls.map((call, i) => shapeCall(call, `call-${i}`));

        // The reference model of the gate, per call. `invoke` takes a name and arguments, not a shape.
        const declared = s.agent ?? tools.map((t) => t.name);
        const handlerKind = s.policy?.handler ?? s.registryHandler;
        const reference = (call: CallSpec, shaped: boolean): 'allow' | 'deny' => {
          if (shaped && call.shape === 'garbage') return 'deny';
          const tool = tools.find((t) => t.canonicalName === canonical(call.name));
          if (!tool || !validArgs(call.args.kind)) return 'deny';
          const form = tool.canonicalName;
          if (!declared.some((d) => canonical(d) === form)) return 'deny';
          if (s.tenant && !s.tenant.some((t) => canonical(t) === form)) return 'deny';
          if (s.caller && !s.caller.some((c) => canonical(c) === form)) return 'deny';
          if (!s.policy) return 'allow';
          const result = referencePolicy(s.policy.rules, s.policy.fallback, tool, call.args.n);
          if (result !== 'ask') return result;
          // No handler: the registry's was removed, and removing it restores the deny fallback (issue 22).
          if (handlerKind === undefined) return 'deny';
          return APPROVING.has(handlerKind) ? 'allow' : 'deny';
        };
        const expectedEffects = calls.map((call) => reference(call, s.route !== 'invoke'));

        let returned: (Decision | null)[];
        switch (s.route) {
          case 'executeToolCalls': {
            const results = await registry.executeToolCalls(raw as ToolCallInput[], context);
            expect(results).toHaveLength(raw.length);
            returned = results.map((r) => ('decision' in r ? r.decision : null));
            break;
          }
          case 'dispatch':
            returned = (await registry.dispatch(raw as ToolCallInput[], context)).map((r) => r.decision);
            break;
          case 'invoke': {
            returned = [];
            for (const call of calls) {
              const result = await registry.invoke(call.name, rawArgs(call.args), context);
              returned.push(result.decision);
            }
            break;
          }
          case 'decide': {
            returned = [];
            for (const call of raw) returned.push(await registry.decide(call as ToolCallInput, context));
            break;
          }
        }
        // One tool_decided event per call, equal to the reference.
        expect(decided).toHaveLength(s.calls.length);
        expect(decided.map((d) => d.effect)).toEqual(expectedEffects);
        for (const [i, decision] of returned.entries()) if (decision) expect(decision).toBe(decided[i]);
        // Executed exactly the allowed calls (none on the decide route), each once.
        const allowedIds = decided.filter((d) => d.effect === 'allow').map((d) => d.callId);
        expect([...executed].sort()).toEqual(s.route === 'decide' ? [] : [...allowedIds].sort());
        // A handler was consulted only for calls that reached `ask`, never for a refused-earlier call.
        for (const id of asked) {
          const decision = decided.find((d) => d.callId === id);
          expect(decision?.stage === 'handler' || decision?.by === 'handler').toBe(true);
        }
        expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
        tally.calls += s.calls.length;
        tally.allowed += allowedIds.length;
        tally.executed += executed.length;
      }),
      fcParams(300, 10_000),
    );
    // The scenarios reach both outcomes often enough to mean something.
    expect(tally.allowed).toBeGreaterThan(tally.calls / 20);
    expect(tally.allowed).toBeLessThan(tally.calls);
    console.log(`execution matrix: ${JSON.stringify(tally)}`);
  });
});
