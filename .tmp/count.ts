import ts from 'typescript';
import { readFileSync } from 'node:fs';
const ROOT = '/work/wt/diff/';
const pkg = JSON.parse(readFileSync(ROOT + 'package.json', 'utf8'));
const entries: Record<string, string> = {};
for (const [k, v] of Object.entries<any>(pkg.exports)) {
  if (typeof v !== 'object') continue;
  entries[k] = v.types.replace('./dist/', 'src/').replace(/\.d\.ts$/, '.ts');
}
const program = ts.createProgram(Object.values(entries).map((f) => ROOT + f), { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, strict: true, noEmit: true, skipLibCheck: true });
const checker = program.getTypeChecker();
for (const [e, f] of Object.entries(entries)) {
  const sf = program.getSourceFile(ROOT + f);
  if (!sf) { console.log(e, 'MISSING', f); continue; }
  const m = checker.getSymbolAtLocation(sf)!;
  const names = checker.getExportsOfModule(m).map((s) => s.name).sort();
  console.log(e, names.length, e === './gateway' || e === './stores' || e === './runner' ? names.join(' ') : '');
}
