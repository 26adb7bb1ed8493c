/**
 * ToolAllowlist keeps its verdicts one byte a position and lists its names by position (issue 25: resolving
 * 100,000 names): on seeded random declarations and layers — repeated spellings, collisions, names that are
 * empty, invisible, unpaired or not strings, layers in and out of declaration order, arrays, frozen arrays,
 * sets and generators — `resolve`, `narrowed` and the gate's `FROM_FORMS` answer as the allowlist before it
 * (fixtures/allowlist-before-issue25.ts): the same names, the same decisions and refusals, the same errors.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as after from '../../src/allowlist.js';
import { canonical } from '../../src/names.js';
import * as before from './fixtures/allowlist-before-issue25.js';

type Shape = 'array' | 'frozen' | 'set' | 'generator';
type Entries = { readonly shape: Shape; readonly entries: readonly unknown[] };

/** A fresh iterable of `entries` in `shape` for each call (a generator is read once). */
function make({ shape, entries }: Entries): Iterable<string> {
  const list = entries as string[];
  if (shape === 'array') return list.slice();
  if (shape === 'frozen') return Object.freeze(list.slice());
  if (shape === 'set') return new Set(list);
  return (function* () {
    yield* list;
  })();
}

// Few atoms, so that spellings repeat and collide: case, full folding (ß, ﬁ, İ), width, composition, edge
// space, invisible (U+200B, U+0000) and unpaired (U+D800) characters, namespaces.
const ATOMS = ['a', 'a', 'b', 'b', 'c', 'A', 'B', 'ß', 'SS', 'ss', 'ﬁ', 'fi', 'İ', 'ｂ', 'é', 'e\u0301'];
const RARE = [' ', ':', '_', '\u200b', '\u0000', '\ud800', ''];
const atom = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom(...ATOMS) },
  { weight: 1, arbitrary: fc.constantFrom(...RARE) },
);
const name = fc.array(atom, { minLength: 1, maxLength: 5 }).map((parts) => parts.join(''));
const notAName = fc.constantFrom<unknown>(1, null, undefined, {}, ['a']);
const entry = fc.oneof({ weight: 40, arbitrary: name }, { weight: 1, arbitrary: notAName });
const shape = fc.constantFrom<Shape>('array', 'array', 'frozen', 'set', 'generator');
const declaration = fc.record({ shape, entries: fc.array(entry, { maxLength: 12 }) });

/** A layer: entries taken from the declaration (by position, in its order or not, re-spelled or not) and others. */
type Pick = { readonly at: number; readonly upper: boolean } | { readonly entry: unknown };
type Layer =
  null | undefined | 'a string' | { readonly shape: Shape; readonly inOrder: boolean; readonly picks: readonly Pick[] };
const pick: fc.Arbitrary<Pick> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ at: fc.nat(15), upper: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ entry }) },
);
const layer: fc.Arbitrary<Layer> = fc.oneof(
  { weight: 1, arbitrary: fc.constantFrom<Layer>(null, undefined, 'a string') },
  { weight: 8, arbitrary: fc.record({ shape, inOrder: fc.boolean(), picks: fc.array(pick, { maxLength: 14 }) }) },
);

function layerOf(spec: Layer, declared: readonly unknown[]): Iterable<string> | null | undefined {
  if (spec === null || spec === undefined) return spec;
  if (typeof spec === 'string') return spec as unknown as Iterable<string>;
  const picks = spec.inOrder
    ? [...spec.picks].sort((x, y) => ('at' in x ? x.at : 99) - ('at' in y ? y.at : 99))
    : spec.picks;
  const entries = picks.map((pick) => {
    if (!('at' in pick)) return pick.entry;
    const spelling = declared[pick.at % Math.max(declared.length, 1)];
    return pick.upper && typeof spelling === 'string' ? spelling.toUpperCase() : spelling;
  });
  return make({ shape: spec.shape, entries });
}

/** What a call gives: its value, or the class and message of what it threw. */
function outcome<T>(run: () => T): { value: T } | { threw: string; message: string } {
  try {
    return { value: run() };
  } catch (error) {
    return { threw: (error as Error).constructor.name, message: (error as Error).message };
  }
}

interface AnyAllowlist {
  readonly agent: string;
  readonly names: readonly string[];
  decide(name: string): unknown;
  check(name: string): void;
  permits(name: string): boolean;
  declaredSpelling(form: string): string | undefined;
}

/** Everything an allowlist answers about `probes`. */
function answers(list: AnyAllowlist, probes: readonly string[]): unknown {
  return {
    agent: list.agent,
    names: list.names,
    frozen: Object.isFrozen(list.names),
    decisions: probes.map((probe) => list.decide(probe)),
    permits: probes.map((probe) => list.permits(probe)),
    checks: probes.map((probe) => outcome(() => list.check(probe))),
    spellings: probes.map((probe) => list.declaredSpelling(canonical(probe))),
  };
}

function probesOf(...lists: readonly unknown[][]): string[] {
  const out = new Set<string>(['a', 'A', 'b', 'ss', 'zzz']);
  for (const list of lists)
    for (const item of list)
      if (typeof item === 'string') {
        out.add(item);
        out.add(item.toUpperCase());
        out.add(` ${item} `);
      }
  return [...out];
}

const options = fc.record({
  agent: fc.constantFrom<string | undefined>(undefined, 'concierge'),
  confusables: fc.constantFrom<'off' | 'error' | undefined>(undefined, 'off', 'error'),
});

describe('ToolAllowlist answers as before issue 25', () => {
  it('resolve and narrowed: the same names, decisions, refusals and errors (seeded)', () => {
    let resolved = 0;
    let refused = 0;
    let narrowedResolved = 0;
    fc.assert(
      fc.property(declaration, layer, layer, declaration, options, (declared, tenant, caller, peer, opts) => {
        const resolveWith = (module: typeof before | typeof after): unknown =>
          module.ToolAllowlist.resolve(make(declared), {
            tenant: layerOf(tenant, declared.entries),
            caller: layerOf(caller, declared.entries),
            ...(opts.agent === undefined ? {} : { agent: opts.agent }),
            ...(opts.confusables === undefined ? {} : { confusables: opts.confusables }),
          });
        const old = outcome(() => resolveWith(before) as before.ToolAllowlist);
        const now = outcome(() => resolveWith(after) as after.ToolAllowlist);
        const probes = probesOf(declared.entries as unknown[], peer.entries as unknown[]);
        if (!('value' in old) || !('value' in now)) {
          expect(now).toEqual(old);
          refused++;
          return;
        }
        resolved++;
        expect(answers(now.value, probes)).toEqual(answers(old.value, probes));
        const narrowOld = outcome(() => old.value.narrowed(make(peer), { agent: 'peer' }));
        const narrowNow = outcome(() => now.value.narrowed(make(peer), { agent: 'peer' }));
        if ('value' in narrowOld && 'value' in narrowNow) {
          narrowedResolved++;
          expect(answers(narrowNow.value, probes)).toEqual(answers(narrowOld.value, probes));
        } else expect(narrowNow).toEqual(narrowOld);
      }),
      { seed: 20261207, numRuns: 1500 },
    );
    // The cases reach both sides: lists that resolve (and narrow) and declarations or layers refused.
    expect(resolved).toBeGreaterThan(300);
    expect(narrowedResolved).toBeGreaterThan(150);
    expect(refused).toBeGreaterThan(100);
  });

  it("FROM_FORMS (the gate's cache): the same names and decisions (seeded)", () => {
    let built = 0;
    fc.assert(
      fc.property(declaration, layer, layer, (declared, tenant, caller) => {
        const spellings = declared.entries.slice();
        const forms = outcome(() => before.declaredForms(spellings, 'where'));
        expect(outcome(() => after.declaredForms(spellings, 'where'))).toEqual(forms);
        if (!('value' in forms)) return;
        const formSet = (spec: Layer): Set<string> | null => {
          const entries = layerOf(spec, spellings);
          if (entries === null || entries === undefined || typeof entries === 'string') return null;
          return new Set([...entries].filter((e): e is string => typeof e === 'string').map(canonical));
        };
        const tenantForms = formSet(tenant);
        const callerForms = formSet(caller);
        const old = before.ToolAllowlist[before.FROM_FORMS](
          'agent',
          forms.value,
          spellings as string[],
          tenantForms,
          callerForms,
        );
        const now = after.ToolAllowlist[after.FROM_FORMS](
          'agent',
          after.declaredForms(spellings, 'where'),
          spellings as string[],
          tenantForms,
          callerForms,
        );
        built++;
        const probes = probesOf(spellings);
        expect(answers(now, probes)).toEqual(answers(old, probes));
      }),
      { seed: 20261208, numRuns: 1000 },
    );
    expect(built).toBeGreaterThan(300);
  });
});
