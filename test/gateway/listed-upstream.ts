/**
 * An upstream as PinTracker reads it (its namespace and its connection's listing), whose tools can be replaced
 * between listings: `tools`, by the name the gateway shows (namespace:name), each its definition as listed. Replace
 * the map whole for a new listing (a real refresh lists new objects). Imports types only, so a test that mocks
 * `node:fs` before it loads the pins can use it.
 */
import type { Upstream } from '../../src/gateway/upstream.js';

export type ListedUpstream = Upstream & { tools: Map<string, Record<string, unknown>> };

export function listedUpstream(namespace: string): ListedUpstream {
  const fake = {
    namespace,
    tools: new Map<string, Record<string, unknown>>(),
    connection: {
      get tools() {
        return [...fake.tools.keys()];
      },
      definition: (name: string) => fake.tools.get(name),
    },
  };
  return fake as unknown as ListedUpstream;
}
