/**
 * The real servers the store tests use (PostgreSQL 127.0.0.1:5432 db `test`, Redis 127.0.0.1:6379) and a
 * name unique to this test run, so parallel runs never share a schema or a key. These tests never skip: a
 * server that does not answer fails them.
 */
import { randomBytes } from 'node:crypto';
import { createServer, connect, type Server, type Socket } from 'node:net';

export const PG_URL =
  process.env['TOOLGATE_TEST_PG'] ?? `postgres://${process.env['PGUSER'] ?? 'postgres'}@127.0.0.1:5432/test`;
export const REDIS_URL = process.env['TOOLGATE_TEST_REDIS'] ?? 'redis://127.0.0.1:6379';

/** A fresh identifier: letters, digits and underscores, unique per call. */
export function uniqueName(label: string): string {
  return `tg_${label}_${process.pid}_${randomBytes(4).toString('hex')}`;
}

/**
 * A TCP proxy to 127.0.0.1:`target` on a port of its own, so a test can make a shared server unreachable for
 * the processes it points at the proxy: `cut()` drops every connection and refuses new ones, `restore()`
 * listens again on the same port.
 */
export class Proxy {
  readonly #target: number;
  readonly #sockets = new Set<Socket>();
  #server: Server | null = null;
  port = 0;

  constructor(target: number) {
    this.#target = target;
  }

  async restore(): Promise<void> {
    if (this.#server) return;
    const server = createServer((client) => {
      const upstream = connect(this.#target, '127.0.0.1');
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on('close', () => this.#sockets.delete(s));
        s.on('error', () => s.destroy());
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as { port: number }).port;
    this.#server = server;
  }

  async cut(): Promise<void> {
    const server = this.#server;
    this.#server = null;
    for (const s of this.#sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
