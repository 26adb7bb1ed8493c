const n = 100_000;
const names = Array.from({ length: n }, (_, i) => `ns${i % 7}:tool_${i}`);
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Cs}]/u;
const CANONICAL_ASCII = /^[\x21-\x40\x5b-\x7e]*$/;
const ASCII_ONLY = /^[\x21-\x7e]*$/;
for (let r = 0; r < 4; r++) {
  let t = performance.now();
  let k = 0;
  for (const x of names) if (x.isWellFormed()) k++;
  const a = performance.now() - t;
  t = performance.now();
  for (const x of names) if (INVISIBLE.test(x)) k++;
  const b = performance.now() - t;
  t = performance.now();
  for (const x of names) if (CANONICAL_ASCII.test(x)) k++;
  const c = performance.now() - t;
  t = performance.now();
  const m = new Map<string, string>();
  for (const x of names) m.set(x, x);
  const d = performance.now() - t;
  t = performance.now();
  for (const x of names) if (m.get(x) === undefined) k++;
  const e = performance.now() - t;
  t = performance.now();
  let young = new Map<string, string>();
  let old = new Map<string, string>();
  for (const x of names) {
    if (young.get(x) === undefined && old.get(x) === undefined) {
      if (young.size >= 2048) {
        old = young;
        young = new Map();
      }
      young.set(x, x);
    }
  }
  const f = performance.now() - t;
  console.log(
    `wellFormed ${a.toFixed(1)} invisible ${b.toFixed(1)} ascii ${c.toFixed(1)} mapset ${d.toFixed(1)} mapget ${e.toFixed(1)} gencache ${f.toFixed(1)} ${k}`,
  );
}
