/**
 * `GET /readyz`: whether this gateway can serve calls now — the policy in force loaded, every upstream
 * connected (each one the policy names is required), every store it uses reachable — and, when not, what
 * is not. Names and states only, never a reason text that could carry an address or a credential (the
 * admin API and the audit have those).
 */
import type { Gateway } from './gateway.js';

/** A store the gateway depends on, checked by a cheap read. */
export interface StoreProbe {
  /** How `/readyz` names it: `counters`, `approvals`, `inbox`. */
  readonly name: string;
  check(): Promise<unknown>;
}

const PROBE_TIMEOUT_MS = 2000;

/** The readiness of `gateway` with `stores`: `ready` only when every check is `ok`. */
export function readiness(
  gateway: Pick<Gateway, 'upstreams' | 'policy'>,
  stores: readonly StoreProbe[],
): () => Promise<{ readonly ready: boolean; readonly checks: Readonly<Record<string, string>> }> {
  return async () => {
    const checks: Record<string, string> = {};
    checks['policy'] = gateway.policy ? 'ok' : 'not loaded';
    for (const upstream of gateway.upstreams.values())
      checks[`upstream ${upstream.namespace}`] = upstream.state === 'ready' ? 'ok' : upstream.state;
    await Promise.all(
      stores.map(async (store) => {
        let timer: NodeJS.Timeout | undefined;
        try {
          await Promise.race([
            store.check(),
            new Promise((_, reject) => {
              timer = setTimeout(() => reject(new Error('timed out')), PROBE_TIMEOUT_MS);
            }),
          ]);
          checks[`store ${store.name}`] = 'ok';
        } catch {
          checks[`store ${store.name}`] = 'unreachable';
        } finally {
          clearTimeout(timer);
        }
      }),
    );
    return { ready: Object.values(checks).every((state) => state === 'ok'), checks };
  };
}
