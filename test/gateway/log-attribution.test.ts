/**
 * Relay.log's rule (relay.ts, task-owners.ts): an upstream's log line, which nothing ties to one request, goes
 * to the one client in flight only if every task unfinished on that upstream is that client's owner's, to the
 * listeners only with no task unfinished there and an upstream of one tenant, and otherwise to nobody. Fakes of an upstream (its requests in
 * flight and its unfinished tasks) and of downstream servers (what each was sent); the end-to-end cases are
 * test/attacks/task-scope.test.ts and task-scope-background.test.ts.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { describe, expect, it } from 'vitest';
import { Relay, type RelayedRequest } from '../../src/gateway/relay.js';
import { NO_OWNER, UnfinishedTasks } from '../../src/gateway/task-owners.js';
import { ownerKey } from '../../src/gateway/tasks.js';
import type { Upstream } from '../../src/gateway/upstream.js';

const ALICE = ownerKey({ subject: null, caller: 'alice', tenant: null });
const BOB = ownerKey({ subject: null, caller: 'bob', tenant: null });

function fakeServer(): Server & { heard: unknown[] } {
  const heard: unknown[] = [];
  return {
    heard,
    transport: {},
    notification: async (n: { params: { data: unknown } }) => void heard.push(n.params.data),
  } as unknown as Server & { heard: unknown[] };
}

function setup() {
  const inflight: Server[] = [];
  const upstream = { namespace: 'jobs', inflight, tasks: new UnfinishedTasks() } as unknown as Upstream & {
    tasks: UnfinishedTasks;
  };
  const relay = new Relay(new Map([['jobs', upstream]]));
  relay.sharedAcrossTenants = () => false;
  const request = (owner?: string): RelayedRequest => ({
    signal: new AbortController().signal,
    progressToken: undefined,
    sendNotification: async () => undefined,
    // Every client here asked for lines (a client that set no level, or asked for none, hears none).
    logLevel: 'debug',
    ...(owner !== undefined ? { owner } : {}),
  });
  /** A 2026-07-28 request's server in flight, owning `owner`'s tasks (or none). */
  const inFlight = (owner?: string) => {
    const server = fakeServer();
    relay.scopeOf(server, request(owner));
    inflight.push(server);
    return server;
  };
  const listener = fakeServer();
  relay.add({ server: listener, logging: true, level: 'debug' });
  const log = (data: string) => relay.log(upstream, { level: 'info', data });
  return { relay, upstream, inflight, inFlight, listener, log };
}

describe("Relay.log: an upstream's log line goes only where whose it is is certain", () => {
  it('with no task unfinished: to the one client in flight, or to the listeners with none', () => {
    const { inFlight, listener, log, inflight } = setup();
    log('idle');
    expect(listener.heard).toEqual(['idle']);
    const alice = inFlight(ALICE);
    log('during');
    expect(alice.heard).toEqual(['during']);
    const bob = inFlight(BOB);
    log('two in flight');
    expect([alice.heard, bob.heard, listener.heard]).toEqual([['during'], [], ['idle']]);
    inflight.length = 0;
  });

  it("with another owner's task unfinished: not to the client in flight, nor to the listeners", () => {
    const { upstream, inFlight, listener, log, inflight } = setup();
    upstream.tasks.started('e1', 'up-1', 60_000, BOB);
    log('background, none in flight');
    const alice = inFlight(ALICE);
    log("background of bob's task, alice in flight");
    expect([alice.heard, listener.heard]).toEqual([[], []]);
    inflight.length = 0;
    const bob = inFlight(BOB);
    log("bob's own");
    expect(bob.heard).toEqual(["bob's own"]);
    // A request that names no owner (a 2025-era session, the fast path) is not bob's.
    inflight.length = 0;
    const session = inFlight();
    log('session in flight');
    expect(session.heard).toEqual([]);
  });

  it('with nothing in flight, an upstream several tenants share: to no listener (a default Relay takes every upstream as shared)', () => {
    const { relay, listener, log, inFlight, inflight } = setup();
    relay.sharedAcrossTenants = () => true;
    log('whose tenant?');
    expect(listener.heard).toEqual([]);
    const alice = inFlight(ALICE);
    log("alice's request");
    expect(alice.heard).toEqual(["alice's request"]);
    inflight.length = 0;
    const fresh = new Relay(new Map());
    const other = fakeServer();
    fresh.add({ server: other, logging: true, level: 'debug' });
    fresh.log({ namespace: 'x', inflight: [], tasks: new UnfinishedTasks() } as unknown as Upstream, {
      level: 'info',
      data: 'unset',
    });
    expect(other.heard).toEqual([]);
  });

  it('with tasks of two owners unfinished: to nobody, even to one of them', () => {
    const { upstream, inFlight, log } = setup();
    upstream.tasks.started('e1', 'up-1', 60_000, BOB);
    upstream.tasks.started('e1', 'up-2', 60_000, ALICE);
    const alice = inFlight(ALICE);
    log('whose?');
    expect(alice.heard).toEqual([]);
  });

  it('a task of no owner blocks everyone; an ended or expired task no longer does', () => {
    const { upstream, inFlight, listener, log, inflight } = setup();
    upstream.tasks.started('e1', 'up-9', 60_000, NO_OWNER);
    const alice = inFlight(ALICE);
    log('blocked');
    upstream.tasks.ended('e1', 'up-9');
    log('free');
    expect(alice.heard).toEqual(['free']);
    inflight.length = 0;
    upstream.tasks.started('e1', 'up-3', 0, BOB);
    log('expired task');
    expect(listener.heard).toEqual(['expired task']);
    // The same id on another connection is another task: ending one leaves the other.
    upstream.tasks.started('e1', 'up-4', 60_000, BOB);
    upstream.tasks.ended('e2', 'up-4');
    log('still blocked');
    expect(listener.heard).toEqual(['expired task']);
  });
});

describe("Relay.log: a 2026-07-28 upstream's line (per-request levels)", () => {
  it('goes only to the one request in flight that carried a level, at or above it; with none in flight, nowhere', () => {
    const inflight: Server[] = [];
    const upstream = {
      namespace: 'mod',
      inflight,
      tasks: new UnfinishedTasks(),
      session: { era: 'modern' },
      // Over HTTP: a line comes on its request's stream (over stdio nothing ties it, see below).
      options: { url: 'http://127.0.0.1/mcp' },
    } as unknown as Upstream;
    const relay = new Relay(new Map([['mod', upstream]]));
    relay.sharedAcrossTenants = () => false;
    const listener = fakeServer();
    const session = { server: listener, logging: true };
    relay.add(session);
    relay.setLevel(session, 'debug');
    const log = (level: 'debug' | 'warning' | 'error', data: string) => relay.log(upstream, { level, data });
    const request = (logLevel?: 'warning'): RelayedRequest => ({
      signal: new AbortController().signal,
      progressToken: undefined,
      sendNotification: async () => undefined,
      ...(logLevel ? { logLevel } : {}),
    });
    // None in flight: a line of no request reaches no listener, whatever level it set.
    log('error', 'of no request');
    // One in flight that carried no level: it asked for no line.
    const plain = fakeServer();
    expect(relay.scopeOf(plain, request()).logLevel).toBeUndefined();
    inflight.push(plain);
    log('error', 'unasked');
    // One that carried `warning`: lines at or above it, its scope carrying the level upstream.
    inflight.length = 0;
    const leveled = fakeServer();
    expect(relay.scopeOf(leveled, request('warning')).logLevel).toBe('warning');
    inflight.push(leveled);
    log('debug', 'too low');
    log('error', 'asked');
    // A 2025-era session's requests carry the level its client set.
    inflight.length = 0;
    expect(relay.scopeOf(listener, request()).logLevel).toBe('debug');
    inflight.push(listener);
    log('debug', 'the session asked');
    expect([listener.heard, plain.heard, leveled.heard]).toEqual([['the session asked'], [], ['asked']]);
  });
});
