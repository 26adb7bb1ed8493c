/**
 * A successful result's text made only when read, for a caller that never reads it (the gateway answers with
 * the upstream's `value`; issue 25.2): the same string as every other route's, made once, and a read that
 * never throws. Unmarked contexts (invoke, executeToolCalls, the runner, the adapters) make it as before.
 */
import { describe, expect, it } from 'vitest';
import { gatewayCall, releasesSignal } from '../../src/gate/index.js';
import { defineTool, ToolRegistry } from '../../src/index.js';
import { registryOf, run } from './fixtures/give-tool.js';

describe('gatewayCall: the text of a successful result made when read', () => {
  for (const async of [false, true]) {
    const how = async ? 'a promise' : 'a plain value';
    it(`gives the same content as an unmarked context, made once and only when read (${how})`, async () => {
      let serialised = 0;
      const value = () => ({ content: [{ type: 'text', text: 'a\nb "c"' }], toJSON: undefined, n: 1 });
      const counted = () => {
        const v = value();
        return { ...v, toJSON: () => (serialised++, { content: v.content, n: v.n }) };
      };
      const eager = await run(registryOf(counted, async), { agent: 'a' });
      expect(serialised).toBe(1);
      const lazy = await run(registryOf(counted, async), gatewayCall({ agent: 'a' }));
      expect(serialised).toBe(1);
      expect(lazy.status).toBe('ok');
      expect(lazy.content).toBe(eager.content);
      expect(lazy.content).toBe(eager.content);
      expect(serialised).toBe(2);
      // Spread, JSON and equality see it as a plain field.
      expect({ ...lazy }.content).toBe(eager.content);
      expect(JSON.parse(JSON.stringify(lazy)).content).toBe(eager.content);
      expect(Object.keys(lazy)).toEqual(Object.keys(eager));
    });

    it(`never throws on a read: a throwing toJSON gives String(value) as before, an unprintable value a fixed text (${how})`, async () => {
      const throwing = () => ({
        toJSON: () => {
          throw new Error('no');
        },
      });
      const eager = await run(registryOf(throwing, async), { agent: 'a' });
      const lazy = await run(registryOf(throwing, async), gatewayCall({ agent: 'a' }));
      expect(eager.content).toBe('[object Object]');
      expect(lazy.content).toBe('[object Object]');
      // Neither JSON nor String can show it: a read still answers, with a fixed text.
      const unprintable = () => Object.assign(Object.create(null) as object, { big: 1n });
      const none = await run(registryOf(unprintable, async), gatewayCall({ agent: 'a' }));
      expect(none.status).toBe('ok');
      expect(() => none.content).not.toThrow();
      expect(none.content).toBe('[a value that cannot be shown as text]');
    });
  }

  it('keeps a string or no value as it was, and an assigned content', async () => {
    expect(
      (
        await run(
          registryOf(() => 'plain', false),
          gatewayCall({ agent: 'a' }),
        )
      ).content,
    ).toBe('plain');
    expect(
      (
        await run(
          registryOf(() => undefined, true),
          gatewayCall({ agent: 'a' }),
        )
      ).content,
    ).toBe('');
    const result = await run(
      registryOf(() => ({ a: 1 }), true),
      gatewayCall({ agent: 'a' }),
    );
    (result as { content: string }).content = 'given';
    expect(result.content).toBe('given');
  });

  it("reuses a finished gateway call's AbortController only when nothing can tell, never another route's", async () => {
    const seen: AbortSignal[] = [];
    let keep = false;
    const registry = new ToolRegistry();
    // A tool that drops its signal when it settles, as the gateway's upstream tools do (atk-pool-user-tool:
    // an unmarked tool never shares one).
    registry.register(
      releasesSignal(
        defineTool({
          name: 'give',
          parameters: { type: 'object' },
          execute: async (_args, { signal }) => {
            seen.push(signal);
            if (keep) signal.addEventListener('abort', () => undefined);
            return { ok: true };
          },
        }),
      ),
    );
    const gateway = () => run(registry, gatewayCall({ agent: 'a' }));
    await gateway();
    await gateway();
    expect(seen[1]).toBe(seen[0]);
    expect(seen[1]!.aborted).toBe(false);
    // A listener left on it keeps it out: the next call gets a new one.
    keep = true;
    await gateway();
    keep = false;
    await gateway();
    expect(seen[3]).not.toBe(seen[2]);
    // Another route's calls never share one.
    await run(registry, { agent: 'a' });
    await run(registry, { agent: 'a' });
    expect(new Set(seen.slice(4)).size).toBe(2);
    expect(seen.slice(4)).not.toContain(seen[3]);
    // An aborted call's controller is not kept.
    const controller = new AbortController();
    const aborting = new ToolRegistry();
    aborting.register(
      releasesSignal(
        defineTool({
          name: 'give',
          parameters: { type: 'object' },
          execute: (_args, { signal }) => {
            seen.push(signal);
            controller.abort('stop');
            return 'done';
          },
        }),
      ),
    );
    await run(aborting, gatewayCall({ agent: 'a', signal: controller.signal }));
    expect(seen.at(-1)!.aborted).toBe(true);
    await gateway();
    expect(seen.at(-1)!.aborted).toBe(false);
    expect(seen.at(-1)).not.toBe(seen.at(-2));
  });
});
