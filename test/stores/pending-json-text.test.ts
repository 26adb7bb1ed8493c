// atk-json24: a stored approval request is read back with its keys as written. The SQL stores keep the request
// (its arguments) and the answer (edited arguments) as JSON text; on Node 24 and 26 a process whose JSON.parse
// an earlier parse poisoned (nodejs/node#63785: any client's or upstream's text) read an escaped key as
// another, so the inbox showed a person other arguments than the call's, and an edited answer named other keys.
// FAILS on Node 24 when pendingOf reads its rows with JSON.parse.
import { describe, expect, it } from 'vitest';
import { pendingOf } from '../../src/stores/shared.js';

describe('pendingOf after a parse that poisons V8 (atk-json24)', () => {
  it('reads the arguments of the request and of the answer as written', () => {
    JSON.parse('{"h":[],"\\\\":0}');
    const args = { h: 1, '"': 'rm -rf /' };
    const row = {
      record: JSON.stringify({ id: 'r1', toolName: 't', parameters: args }),
      answer: JSON.stringify({ effect: 'allow', arguments: args }),
      created_at: 1,
      expires_at: 10,
      status: 'answered',
      answered_at: 2,
    };
    const pending = pendingOf(row, 5)!;
    expect(Object.keys(pending.parameters)).toEqual(['h', '"']);
    expect(Object.keys(pending.answer!.arguments!)).toEqual(['h', '"']);
  });
});
