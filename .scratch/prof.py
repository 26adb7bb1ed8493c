import json,sys,collections
p=json.load(open(sys.argv[1]))
nodes={n['id']:n for n in p['nodes']}
parent={}
for n in p['nodes']:
    for c in n.get('children',[]): parent[c]=n['id']
dt=collections.Counter()
samples=p['samples']; deltas=p['timeDeltas']
for s,d in zip(samples,deltas): dt[s]+=d
total=sum(deltas)
self_=collections.Counter(); incl=collections.Counter()
def key(n):
    cf=n['callFrame']; return f"{cf['functionName'] or '(anon)'} {cf['url'].split('/')[-1]}:{cf['lineNumber']}"
for nid,t in dt.items():
    n=nodes[nid]; self_[key(n)]+=t
    seen=set(); x=nid
    while x is not None:
        k=key(nodes[x])
        if k not in seen: incl[k]+=t; seen.add(k)
        x=parent.get(x)
print('total ms',total/1000)
print('--- self')
for k,t in self_.most_common(35): print(f"{t/total*100:5.1f}% {k}")
print('--- inclusive')
for k,t in incl.most_common(int(sys.argv[2]) if len(sys.argv)>2 else 60): print(f"{t/total*100:5.1f}% {k}")
print('--- root children')
root=[n for n in p['nodes'] if n['callFrame']['functionName']=='(root)'][0]
def sub(nid):
    t=dt.get(nid,0)
    for c in nodes[nid].get('children',[]): t+=sub(c)
    return t
for c in root.get('children',[]):
    t=sub(c)
    if t/total>0.002: print(f"{t/total*100:5.1f}% {t/1000:8.0f}ms {key(nodes[c])}")
