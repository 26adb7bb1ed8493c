/**
 * Attack (fail open, src/schema-bounds.ts `uniqueItems`): an item that is an object with an own key `constructor` is
 * not "plain JSON data" to the new keyword and is compared by Ajv's `equal`, whose first test is
 * `a.constructor !== b.constructor`: by identity, so two objects whose `constructor` is an object or array, however
 * equal, are told apart. JSON text makes them (`JSON.parse` gives `{"constructor": {…}}` the key as its own): two
 * equal payees `{"constructor":{"iban":"X"}}` passed `uniqueItems: true`. The reference Ajv does the same (its bug,
 * and main's): no differential with it, but arguments the schema refuses run the tool — the keyword the branch
 * rewrote knows the key (it sends such items to `equal`) and keeps the hole. Fails on `schemacap` and on main.
 */
import { describe, it } from 'vitest';
import { neverRuns } from './fixtures/schema-tool.js';

const PAYEES = {
  type: 'object',
  required: ['payees'],
  properties: { payees: { type: 'array', items: { type: 'object' }, uniqueItems: true } },
};

describe("uniqueItems and an own 'constructor' key", () => {
  it.each([
    ['an object', '{"payees":[{"constructor":{"iban":"X"}},{"constructor":{"iban":"X"}}]}'],
    ['an array', '{"payees":[{"constructor":[]},{"constructor":[]}]}'],
    ['an object, a level down', '{"payees":[{"to":{"constructor":{}}},{"to":{"constructor":{}}}]}'],
  ])('two equal items whose constructor is %s never run the tool', async (_label, text) => {
    await neverRuns(PAYEES, JSON.parse(text) as Record<string, unknown>, /uniqueItems/);
  });
});
