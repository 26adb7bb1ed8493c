/** CPU time the tests measure: this process's user + system time while a piece of work ran, in milliseconds. */

/** `run`'s value and the CPU milliseconds it took. */
export function cpuMs<T>(run: () => T): [T, number] {
  const start = process.cpuUsage();
  const value = run();
  const { user, system } = process.cpuUsage(start);
  return [value, (user + system) / 1000];
}

/** The CPU milliseconds `run` took, awaited (other work of the process meanwhile counts too). */
export async function asyncCpuMs(run: () => Promise<unknown>): Promise<number> {
  const start = process.cpuUsage();
  await run();
  const { user, system } = process.cpuUsage(start);
  return (user + system) / 1000;
}
