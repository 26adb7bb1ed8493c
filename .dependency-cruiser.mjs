/**
 * The import rules of src/ (ARCHITECTURE.md "Import rules"), checked by `npm test` (`npm run check:imports`).
 * dependency-cruiser 17 (the last line that runs on Node 20; 18 needs Node 22). Type-only imports count:
 * an import circle of types is still a circle.
 */
const WINGS = '(registry\\.ts|runner/|stores/|limits/|gateway/|inbox/|adapters/|policy-file/|mcp/|cli/)';

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'contracts-types-only',
      comment:
        'src/contracts/ is the bottom of the graph: types only, from the other contracts and the core leaf modules ' +
        '(decision, errors, tool, allowlist, permissions, formats, schema), none of which imports anything above them.',
      severity: 'error',
      from: { path: '^src/contracts/' },
      to: {
        pathNot:
          '^src/(contracts/|decision\\.ts$|errors\\.ts$|tool\\.ts$|allowlist\\.ts$|permissions/|formats/|schema\\.ts$)',
      },
    },
    {
      name: 'contracts-no-runtime-import',
      comment: 'src/contracts/ imports types only (import type / export type).',
      severity: 'error',
      from: { path: '^src/contracts/' },
      to: { dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'crypto-node-only',
      comment: 'src/crypto.ts imports node:crypto and nothing else.',
      severity: 'error',
      from: { path: '^src/crypto\\.ts$' },
      to: { pathNot: '^(node:)?crypto$' },
    },
    {
      name: 'gate-no-wings',
      comment:
        'src/gate/ is the path and nothing else: it imports no wing (the registry, runner, stores, limits, gateway, inbox, adapters, policy files, MCP client, CLI).',
      severity: 'error',
      from: { path: '^src/gate/' },
      to: { path: `^src/${WINGS}` },
    },
    {
      name: 'environment-inside-the-gate',
      comment:
        "A registry's GateEnvironment is read only inside src/gate/: src/gate/environment.ts is imported by the gate " +
        'and by registry.ts (which binds its own); every other file hands the façade a registry (a ToolSource).',
      severity: 'error',
      from: { pathNot: '^src/(gate/|registry\\.ts$)' },
      to: { path: '^src/gate/environment\\.ts$' },
    },
    {
      name: 'wings-through-the-facade',
      comment: 'The gateway, the inbox and the adapters reach the gate only through its façade, src/gate/index.ts.',
      severity: 'error',
      from: { path: '^src/(gateway|inbox|adapters)/' },
      to: { path: '^src/gate/', pathNot: '^src/gate/index\\.ts$' },
    },
    {
      name: 'gateway-not-inbox-or-adapters',
      severity: 'error',
      from: { path: '^src/gateway/' },
      to: { path: '^src/(inbox|adapters)/' },
    },
    {
      name: 'inbox-not-gateway-or-adapters',
      severity: 'error',
      from: { path: '^src/inbox/' },
      to: { path: '^src/(gateway|adapters)/' },
    },
    {
      name: 'adapters-not-gateway-or-inbox',
      severity: 'error',
      // KNOWN EXCEPTION (mcp helper, issue 23 with the gateway split): `toolgate/mcp` re-exports the gateway
      // with one upstream (createMcpProxy, serveMcpProxyHttp and their policy/auth helpers) from
      // src/adapters/mcp/index.ts; it moves to the gateway's own entry (or the gateway's façade) there.
      from: { path: '^src/adapters/', pathNot: '^src/adapters/mcp/index\\.ts$' },
      to: { path: '^src/(gateway|inbox)/' },
    },
    {
      name: 'limits-below-stores',
      comment:
        'src/limits/ (the Limiter) sits below src/stores/ (ARCHITECTURE.md "The layers"): it reaches a counter store ' +
        'through the contract (src/contracts/stores.ts), and a store may import what limits share (MAX_WINDOW_MS), ' +
        'never the other way round.',
      severity: 'error',
      from: { path: '^src/limits/' },
      to: { path: '^src/stores/' },
    },
    {
      name: 'no-circular',
      comment: 'No import circle anywhere in src/ (type-only imports included).',
      severity: 'error',
      from: {
        path: '^src/',
      },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/.*\\.test\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
