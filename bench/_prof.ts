import { ToolAllowlist } from '../src/index.js';
import { canonical, canonicalIndex } from '../src/names.js';
const n = 100_000;
const names = Array.from({ length: n }, (_, i) => `ns${i % 7}:tool_${i}`);
const tenant = names.filter((_, i) => i % 10 !== 8);
const caller = names.filter((_, i) => i % 10 !== 7);
for (let r = 0; r < 5; r++) {
  let t = performance.now();
  canonicalIndex(names, 'x');
  const a = performance.now() - t;
  t = performance.now();
  for (const x of tenant) canonical(x);
  const b = performance.now() - t;
  t = performance.now();
  ToolAllowlist.resolve(names, { tenant, caller });
  const c = performance.now() - t;
  console.log(`canonicalIndex ${a.toFixed(1)} ms, canonical x90k ${b.toFixed(1)} ms, resolve ${c.toFixed(1)} ms`);
}
