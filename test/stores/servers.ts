/**
 * The real servers the store tests use (PostgreSQL 127.0.0.1:5432 db `test`, Redis 127.0.0.1:6379) and a
 * name unique to this test run, so parallel runs never share a schema or a key. These tests never skip: a
 * server that does not answer fails them.
 */
import { randomBytes } from 'node:crypto';

export const PG_URL =
  process.env['TOOLGATE_TEST_PG'] ?? `postgres://${process.env['PGUSER'] ?? 'postgres'}@127.0.0.1:5432/test`;
export const REDIS_URL = process.env['TOOLGATE_TEST_REDIS'] ?? 'redis://127.0.0.1:6379';

/** A fresh identifier: letters, digits and underscores, unique per call. */
export function uniqueName(label: string): string {
  return `tg_${label}_${process.pid}_${randomBytes(4).toString('hex')}`;
}
