// atk-json24: the lock file is read with its keys as written. It holds the upstreams' definitions as they were
// listed (JSON.stringify writes a key holding `"` or `\` with an escape); on Node 24 and 26 a process whose
// JSON.parse was poisoned by an earlier parse (nodejs/node#63785: a client's or an upstream's text) read such
// a key as another, so the entry's hash no longer matched and the lock file was refused as edited by hand:
// the gateway could not start or reload. FAILS on Node 24 when the lock file is read with JSON.parse.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { definitionPin, pinnedDefinition, readLockFile } from '../../src/gateway/pins.js';
import { tempDir } from '../harness.js';

describe('readLockFile after a parse that poisons V8 (atk-json24)', () => {
  it('reads a pinned definition whose schema names the key `"` as written', () => {
    JSON.parse('{"h":[],"\\\\":0}');
    const definition = pinnedDefinition({
      name: 'quoted',
      inputSchema: { type: 'object', properties: { h: { type: 'number' }, '"': { type: 'string' } } },
    });
    const file = join(tempDir('pins-json-text'), 'policy.lock.json');
    const lock = { version: 2, tools: { 'up:quoted': { sha256: definitionPin(definition), definition } } };
    writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
    const read = readLockFile(file);
    const entry = Object.values(read.tools)[0]!;
    expect(Object.keys((entry.definition.inputSchema as { properties: object }).properties)).toEqual(['h', '"']);
  });
});
