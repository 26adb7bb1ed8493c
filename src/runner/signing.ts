/**
 * Canonical JSON and the HMACs that bind approvals and run states (node:crypto, no dependency).
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * JSON with object keys sorted at every level, so one value has one text (and one hash) whatever order
 * its keys were built in. Values JSON cannot carry (functions, symbols, bigints, cycles) throw, and the
 * caller fails closed.
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

/** SHA-256 (hex) of the canonical JSON of `value`. */
export function hashOf(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
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
