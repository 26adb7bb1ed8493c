import pm from 'picomatch/posix.js';
import { compileGlobMatcher, globSteps } from '../src/policy-file/glob.ts';
const o = { dot: true, nonegate: true, noextglob: true, strictSlashes: false };
const cases: [string, string][] = [
  ['/r/inbox/**', '/r/inbox'],
  ['/r/inbox/**', '/r/inbox/a/b'],
  ['/r/**/x', '/r/x'],
  ['/r/**/x', '/r/a/b/x'],
  ['a*b', 'a/b'],
  ['a**b', 'axyb'],
  ['/r/*', '/r/.env'],
  ['/r/*', '/r'],
  ['**', 'a/b'],
  ['**', '/a/b'],
  ['*', '/a'],
  ['/**', '/a'],
  ['a/{b,c}/d', 'a/c/d'],
  ['a/{1..3}', 'a/2'],
  ['a/{1..3}', 'a/4'],
  ['[a-c]x', 'bx'],
  ['[!a]x', 'bx'],
  ['[!a]x', 'ax'],
  ['a/*', 'a/b/'],
  ['**/x', 'x'],
  ['**/x', 'a/x'],
  ['*.txt', '.txt'],
  ['a/b', 'a/b/'],
  ['a\\*', 'a*'],
  ['a\\*', 'ab'],
  ['a/**/', 'a/b/'],
  ['{a,b/**}', 'b/c'],
  ['/home/**', '/home/ann/.ssh/id_rsa'],
  ['/data/**', '/data/../etc'],
  ['*.example.com', 'api.example.com'],
  ['*.example.com', 'example.com'],
  ['/logs/*-*-*-*.log', '/logs/a-b-c-d.log'],
  ['/logs/*-*-*-*.log', '/logs/a-b-c.log'],
  ['{a,{b,c}}x', 'cx'],
  ['a{b', 'a{b'],
  ['a[b', 'a[b'],
  ['?', '/'],
  ['?', 'a'],
];
for (const [p, s] of cases) {
  const mine = compileGlobMatcher(p).test(s);
  const theirs = pm(p, o)(s);
  console.log(mine === theirs ? '  ' : '!!', JSON.stringify(p), JSON.stringify(s), 'mine', mine, 'picomatch', theirs);
}
const g = compileGlobMatcher('/logs/*-*-*-*.log');
let s0 = globSteps();
let t = Date.now();
console.log(g.test('/logs/' + '-'.repeat(100000) + 'x'), globSteps() - s0, Date.now() - t, 'ms');
const g2 = compileGlobMatcher('/data/**/x/**/y/**/z');
s0 = globSteps();
t = Date.now();
console.log(g2.test('/data/' + 'a/'.repeat(50000) + 'q'), globSteps() - s0, Date.now() - t, 'ms');
const n = compileGlobMatcher('*a*a*a*a*a*b', { names: true });
s0 = globSteps();
t = Date.now();
console.log(n.test('a'.repeat(100000)), globSteps() - s0, Date.now() - t, 'ms');
console.log(compileGlobMatcher('github:*', { names: true }).test('github:repos/delete'));
