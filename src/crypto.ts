/**
 * The one home of canonical JSON, hashes, MACs and the secret parser (node:crypto only: this file imports
 * nothing else, a rule `npm test` checks). Approvals, run states, pins, inbox links and sessions all bind
 * what they sign through these functions, so "the same value" means the same bytes everywhere.
 */
import * as nodeCrypto from 'node:crypto';
import { createHash, createHmac, randomFillSync, timingSafeEqual } from 'node:crypto';

/**
 * JSON with object keys sorted at every level, so one value has one text (and one hash) whatever order
 * its keys were built in. Values JSON cannot carry (functions, symbols, bigints, cycles, non-finite
 * numbers) throw, and the caller fails closed.
 *
 * @example
 * canonicalJson({ b: 1, a: [true, null] }); // '{"a":[true,null],"b":1}'
 */
export function canonicalJson(value: unknown): string {
  return write(value, new Set());
}

function write(value: unknown, seen: Set<object>): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`canonical JSON cannot carry the number ${String(value)}`);
      return JSON.stringify(value);
    case 'object': {
      const withJson = value as { toJSON?: () => unknown };
      if (typeof withJson.toJSON === 'function') return write(withJson.toJSON(), seen);
      if (seen.has(value)) throw new TypeError('canonical JSON cannot carry a cyclic value');
      seen.add(value);
      let out: string;
      if (Array.isArray(value)) {
        out = `[${value.map((item) => (item === undefined ? 'null' : write(item, seen))).join(',')}]`;
      } else {
        const record = value as Record<string, unknown>;
        const keys = Object.keys(record)
          .filter((k) => record[k] !== undefined)
          .sort();
        out = `{${keys.map((k) => `${JSON.stringify(k)}:${write(record[k], seen)}`).join(',')}}`;
      }
      seen.delete(value);
      return out;
    }
    default:
      throw new TypeError(`canonical JSON cannot carry a ${typeof value}`);
  }
}

/** `crypto.hash` where this Node has it. */
const oneShot = (nodeCrypto as { hash?: (algorithm: string, data: string | Uint8Array, encoding: 'hex') => string })
  .hash;

/** SHA-256 (hex) of the canonical JSON of `value`. */
export function hashOf(value: unknown): string {
  const text = canonicalJson(value);
  // The one-shot hash (Node ≥ 20.12) gives the same digest without a Hash object per call.
  return sha256Hex(text);
}

/** SHA-256 (hex) of `data`, by `crypto.hash` where this Node has it. */
function sha256Hex(data: string | Uint8Array): string {
  return oneShot !== undefined ? oneShot('sha256', data, 'hex') : createHash('sha256').update(data).digest('hex');
}

/**
 * Past this many characters V8 hashes a string by its length alone (String::kMaxHashCalcLength is 16,383): every
 * longer string of one length falls in one bucket of a Map or a Set, and each look-up compares it with all of them.
 */
export const HASHED_LENGTH_MAX = 16_383;

/**
 * A Map's or Set's key for a text an outsider chooses: the text itself when V8 hashes it by its characters (at most
 * {@link HASHED_LENGTH_MAX} of them, and not starting with NUL), else NUL and the SHA-256 (hex) of its UTF-16 code
 * units: two texts are equal exactly when their keys are (as far as SHA-256 collides never), and no key is longer than
 * 65 characters past the bound. Without it, 2,000 keys of 16,400 characters differing at their end took 3.3 s to
 * store and find in a Map (44 ms at 16,000 characters).
 *
 * @example
 * safeKey('{"type":"object"}') === '{"type":"object"}'; // short texts are their own keys
 * safeKey('x'.repeat(20_000)).length === 65;
 */
export function safeKey(text: string): string {
  if (text.length <= HASHED_LENGTH_MAX && text.charCodeAt(0) !== 0) return text;
  // UTF-16 code units (not UTF-8, which writes every lone surrogate as U+FFFD): one text, one digest.
  const units = Buffer.from(text, 'utf16le');
  return `\u0000${sha256Hex(units)}`;
}

/** HMAC-SHA256 (hex) of the canonical JSON of `value` under `secret`. */
export function macOf(secret: Uint8Array, value: unknown): string {
  return createHmac('sha256', secret).update(canonicalJson(value)).digest('hex');
}

/** Compares two hex MACs in constant time; anything that is not a string of the right length is false. */
export function sameMac(a: unknown, b: string): boolean {
  if (typeof a !== 'string' || a.length !== b.length) return false;
  return timingSafeEqual(Buffer.from(a), Buffer.from(b));
}

/** The fewest bytes a signing secret may have (an HMAC-SHA256 key; 32 random bytes are recommended). */
export const MIN_SECRET_BYTES = 16;

/**
 * THE secret parser: a string (its UTF-8 bytes) or bytes of at least {@link MIN_SECRET_BYTES}, as a private
 * copy (a caller that later changes its buffer does not change the key). Anything else is a TypeError
 * naming `option` and what was received — never the secret itself.
 *
 * @example
 * const secret = secretOf(process.env.TOOLGATE_SECRET, 'AgentRunner option "secret"');
 */
export function secretOf(value: unknown, option: string): Uint8Array {
  let bytes: Uint8Array | null = null;
  if (typeof value === 'string') bytes = new TextEncoder().encode(value);
  else if (value instanceof Uint8Array) bytes = Uint8Array.from(value);
  if (bytes === null || bytes.length < MIN_SECRET_BYTES)
    throw new TypeError(
      `${option} must be a string or bytes of at least ${MIN_SECRET_BYTES} bytes, got ${received(value, bytes)}`,
    );
  return bytes;
}

function received(value: unknown, bytes: Uint8Array | null): string {
  if (bytes !== null) return `${typeof value === 'string' ? 'a string of' : ''} ${bytes.length} bytes`.trim();
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : typeof value;
}

/**
 * A fresh random 32-byte key, cut from a pool filled by the CSPRNG 64 keys at a time (as node's randomUUID
 * pools its bytes): a runner on its own memory stores makes one per construction, and randomBytes(32) costs a
 * system call each time. Each key is a copy; the pool's bytes are handed out once and never reused.
 */
export function randomKey(): Uint8Array {
  if (keyOffset === KEY_POOL.length) {
    randomFillSync(KEY_POOL);
    keyOffset = 0;
  }
  const key = KEY_POOL.slice(keyOffset, keyOffset + 32);
  KEY_POOL.fill(0, keyOffset, keyOffset + 32);
  keyOffset += 32;
  return key;
}
const KEY_POOL = new Uint8Array(32 * 64);
let keyOffset = KEY_POOL.length;
