import re,glob,sys,collections
files=glob.glob('docs/**/*.md',recursive=True)+['README.md','ARCHITECTURE.md']+glob.glob('examples/**/*.ts',recursive=True)
names=collections.defaultdict(set)
for f in files:
    try: s=open(f).read()
    except: continue
    for m in re.finditer(r"import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+['\"](toolgate(?:/[a-z-]+)?)['\"]",s):
        for n in m.group(1).split(','):
            n=n.strip()
            if not n: continue
            n=re.sub(r'^type\s+','',n).split(' as ')[0].strip()
            names[m.group(2)].add(n)
for k in sorted(names):
    if k in ('toolgate/gateway','toolgate/stores','toolgate/runner'):
        print(k,len(names[k]),' '.join(sorted(names[k])))
