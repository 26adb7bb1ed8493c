/**
 * How toolgate's own routes reach a registry's gate environment without it being part of ToolRegistry's
 * published type: a WeakMap filled by the registry's constructor and read only by modules of this package
 * (no entry point exports it), so no caller can get the emitter or forge a Decision event.
 */
import type { GateEnvironment } from '../contracts/gate.js';

const environments = new WeakMap<object, () => GateEnvironment>();

/** Called once by ToolRegistry's constructor. */
export function bindEnvironment(registry: object, read: () => GateEnvironment): void {
  if (environments.has(registry)) throw new TypeError('toolgate internal error: a registry is bound once');
  environments.set(registry, read);
}

/** The gate's view of `registry` as it stands now; throws a TypeError for anything that is not a ToolRegistry. */
export function environmentOf(registry: object): GateEnvironment {
  const read = environments.get(registry);
  if (!read) throw new TypeError('expected a ToolRegistry');
  return read();
}

/** True for a ToolRegistry of this copy of toolgate. */
export function isRegistry(value: unknown): boolean {
  return typeof value === 'object' && value !== null && environments.has(value);
}
