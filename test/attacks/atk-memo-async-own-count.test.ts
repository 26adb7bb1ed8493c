/**
 * Attack (src/schema-bounds.ts `newAsyncCheck` × src/gate/snapshot-text.ts's memo; held): each `$async` check counts
 * its steps into a count of its own, and keeps its other state by its root value (src/schema-check.ts). The memo hands
 * calls of one text one object, so checks of that object at once share every piece of state kept by it: a count kept
 * there (beside the ids) would be shared too, and calls of one text each well within the bound, together past it,
 * would be refused (or one check's start would set the others' count back to zero). A format read last records the
 * count of the check running it (src/schema-bounds.ts `stepsCounted`): each check of the one object, started while
 * the others await, counts exactly what it counts alone.
 *
 * Fails when the count is kept by the root value: planted, one state per root value while any check of it runs
 * (`startAsyncCheck` reusing it) and `newAsyncCheck` taking its count from that state, the eight checks counted up
 * to 142,967 where each alone counts 20,152 or 20,369 (test/attacks/atk-async-steps-shared, whose checks hold distinct
 * objects, passes with it).
 */
import { describe, expect, it } from 'vitest';
import { defineTool, ToolRegistry } from '../../src/index.js';
import { stepsCounted } from '../../src/schema-bounds.js';
import { ajvFor } from '../../src/schema-dialects.js';

/** What the format `probe` saw: the string it checked, and the running check's count then. */
const probes: [string, number][] = [];
// Added to the draft-07 Ajv before the schemas below compile (formats are read when a schema compiles).
ajvFor({}).addFormat('probe', (text: string) => (probes.push([text, stepsCounted()]), true));

/** A list (with `uniqueItems`) behind an `$async` reference, then `z`, probed last: by then all the check's steps. */
function schema(list: object): Record<string, unknown> {
  return {
    $async: true,
    type: 'object',
    properties: { l: { $ref: '#/$defs/l' }, m: { $ref: '#/$defs/l' }, z: { type: 'string', format: 'probe' } },
    $defs: { l: { $async: true, type: 'array', uniqueItems: true, ...list } },
  };
}

function gate(): ToolRegistry {
  const registry = new ToolRegistry();
  registry.register(defineTool({ name: 'a', parameters: schema({}), execute: () => 'a' }));
  registry.register(
    defineTool({
      name: 'b',
      parameters: schema({ items: { type: ['number', 'array', 'object'] } }),
      execute: () => 'b',
    }),
  );
  return registry;
}

const TEXT = `{"l":[${Array.from({ length: 40 }, (_, i) => i).join(',')}],"m":[[1],[2],{"k":3}],"z":"probe"}`;

describe('checks of one memoised object at once each count their own steps', () => {
  it('the same text to two tools, eight calls at once: each check counts what it counts alone', async () => {
    expect(TEXT.length).toBeLessThanOrEqual(256);
    const registry = gate();
    const alone: Record<string, number> = {};
    for (const name of ['a', 'b']) {
      probes.length = 0;
      expect((await registry.dispatch([{ id: name, name, arguments: TEXT }]))[0]!.status).toBe('ok');
      expect(probes).toHaveLength(1);
      alone[name] = probes[0]![1];
    }
    expect(alone['a']).toBeGreaterThan(0);
    probes.length = 0;
    const names = Array.from({ length: 8 }, (_, i) => (i % 3 === 0 ? 'b' : 'a'));
    const results = await Promise.all(
      names.map((name, i) => registry.dispatch([{ id: `${i}`, name, arguments: TEXT }])),
    );
    expect(results.map(([result]) => result!.status)).toEqual(names.map(() => 'ok'));
    // Each probe is its own check's (in the order they reached `z`): the counts alone, as many of each.
    const counts = probes.map(([, steps]) => steps).sort((x, y) => x - y);
    const expected = names.map((name) => alone[name]!).sort((x, y) => x - y);
    expect(counts).toEqual(expected);
  });
});
