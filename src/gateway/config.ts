/**
 * The gateway's configuration as a policy file states it (its `gateway:` section, checked by the policy
 * schema): upstreams by namespace, the lock file and what a drifted tool gets. `${NAME}` in an upstream's
 * env, headers, args or url is read from the environment; a variable that is not set refuses the whole
 * configuration (a header silently sent as "Bearer " would be worse).
 */
import { dirname, isAbsolute, resolve } from 'node:path';
import { policyToolMetadata, policyToolParameters } from './policy.js';
import { ConfigurationError } from '../errors.js';
import { canonical } from '../names.js';
import type { PolicySet } from '../policy-file/policy-set.js';
import type { PolicyUpstreamData } from '../policy-file/types.js';
import type { JsonSchema } from '../schema.js';
import type { ToolMetadataInput } from '../tool.js';
import type { GatewayPinOptions } from './gateway.js';
import { defaultLockFile } from './pins.js';
import type { GatewayUpstreamOptions } from './upstream.js';

/** The gateway's part of a policy file, ready for {@link createGateway}. */
export interface GatewayConfig {
  readonly upstreams: Readonly<Record<string, GatewayUpstreamOptions>>;
  readonly pins: GatewayPinOptions | null;
}

/**
 * Reads the `gateway:` section of a loaded policy file. Throws a ConfigurationError naming the upstream
 * and field for a missing environment variable, both or neither of `command` and `url`, or no upstream.
 */
export function gatewayConfigOf(
  set: PolicySet,
  env: Readonly<Record<string, string | undefined>> = process.env,
): GatewayConfig {
  const section = set.data.gateway ?? {};
  const base = set.file ? dirname(resolve(set.file)) : process.cwd();
  const metadata = policyToolMetadata(set);
  const parameters = policyToolParameters(set);
  const upstreams: Record<string, GatewayUpstreamOptions> = {};
  const entries = Object.entries(section.upstreams ?? {});
  if (entries.length === 0)
    throw new ConfigurationError(
      'the policy file names no upstream server: add gateway.upstreams (e.g. `fs: { command: mcp-server-filesystem, args: [/srv] }`)',
    );
  for (const [namespace, data] of entries)
    upstreams[namespace] = upstreamOf(namespace, data, base, env, metadata, parameters);
  return { upstreams, pins: pinOptionsOf(set) };
}

/** The lock file and what a drifted tool gets, from the `gateway:` section (null: `pin: off`). Reads no environment. */
export function pinOptionsOf(set: PolicySet): GatewayPinOptions | null {
  const section = set.data.gateway ?? {};
  const base = set.file ? dirname(resolve(set.file)) : process.cwd();
  const mode = section.pin ?? 'refuse';
  if (mode === 'off') return null;
  const lock =
    section.lock === undefined ? null : isAbsolute(section.lock) ? section.lock : resolve(base, section.lock);
  return {
    file: lock ?? (set.file ? defaultLockFile(resolve(set.file)) : resolve('toolgate.lock.json')),
    onDrift: mode,
  };
}

function upstreamOf(
  namespace: string,
  data: PolicyUpstreamData,
  base: string,
  env: Readonly<Record<string, string | undefined>>,
  metadata: Readonly<Record<string, ToolMetadataInput>>,
  parameters: Readonly<Record<string, JsonSchema>>,
): GatewayUpstreamOptions {
  const at = `gateway.upstreams.${namespace}`;
  if ((data.command === undefined) === (data.url === undefined))
    throw new ConfigurationError(`${at}: give exactly one of "command" (stdio) and "url" (Streamable HTTP)`);
  const expand = (value: string, field: string): string =>
    value.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, name: string | undefined) => {
      if (name === undefined) return '$';
      const found = env[name];
      if (found === undefined)
        throw new ConfigurationError(`${at}.${field}: the environment variable ${name} is not set`);
      return found;
    });
  const map = (
    record: Readonly<Record<string, string>> | undefined,
    field: string,
  ): Record<string, string> | undefined =>
    record && Object.fromEntries(Object.entries(record).map(([k, v]) => [k, expand(v, `${field}.${k}`)]));
  // The policy file's `tools:` metadata and parameter schemas, by this upstream's own tool names.
  const prefixed = data.prefix ?? true;
  // Matched by canonical form, as `toolgate explain` and the registry match names: `DOCS:echo` and
  // `ｄｏｃｓ:echo` are this upstream's `echo` too (a case-sensitive prefix once dropped them).
  const ownPrefix = `${canonical(namespace)}:`;
  const ownNames = <T>(byName: Readonly<Record<string, T>>): Record<string, T> | undefined => {
    const own: Record<string, T> = {};
    for (const [name, spec] of Object.entries(byName)) {
      const form = canonical(name);
      if (prefixed && !form.startsWith(ownPrefix)) continue;
      const key = prefixed ? form.slice(ownPrefix.length) : form;
      if (Object.hasOwn(own, key))
        throw new ConfigurationError(
          `tools: two entries name the tool ${JSON.stringify(name)} of ${at} (in another spelling)`,
        );
      own[key] = spec;
    }
    return Object.keys(own).length > 0 ? own : undefined;
  };
  const ownMetadata = ownNames(metadata);
  const ownParameters = ownNames(parameters);
  const common = {
    prefix: prefixed,
    ...(data.trusted !== undefined ? { trusted: data.trusted } : {}),
    ...(data.callTimeoutMs !== undefined ? { callTimeoutMs: data.callTimeoutMs } : {}),
    ...(data.connectTimeoutMs !== undefined ? { connectTimeoutMs: data.connectTimeoutMs } : {}),
    ...(ownMetadata ? { metadata: ownMetadata } : {}),
    ...(ownParameters ? { parameters: ownParameters } : {}),
  };
  if (data.url !== undefined) {
    const headers = map(data.headers, 'headers');
    return { url: expand(data.url, 'url'), ...(headers ? { headers } : {}), ...common };
  }
  if (data.headers) throw new ConfigurationError(`${at}.headers: headers apply to a "url" upstream only`);
  const childEnv = map(data.env, 'env');
  return {
    stdio: {
      command: expand(data.command!, 'command'),
      args: (data.args ?? []).map((a, i) => expand(a, `args[${i}]`)),
      ...(childEnv ? { env: childEnv } : {}),
      ...(data.cwd ? { cwd: isAbsolute(data.cwd) ? data.cwd : resolve(base, data.cwd) } : {}),
      stderr: 'inherit',
    },
    ...common,
  };
}
