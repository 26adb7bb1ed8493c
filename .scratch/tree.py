import json,sys,collections
p=json.load(open(sys.argv[1])); th=float(sys.argv[2]) if len(sys.argv)>2 else 0.3
nodes={n['id']:n for n in p['nodes']}
dt=collections.Counter()
for s,d in zip(p['samples'],p['timeDeltas']): dt[s]+=d
total=sum(p['timeDeltas'])
memo={}
def sub(nid):
    if nid in memo: return memo[nid]
    t=dt.get(nid,0)
    for c in nodes[nid].get('children',[]): t+=sub(c)
    memo[nid]=t; return t
def key(n):
    cf=n['callFrame']; return f"{cf['functionName'] or '(anon)'} {cf['url'].split('/')[-1]}:{cf['lineNumber']}"
def show(nid,depth):
    t=sub(nid)
    if t/total*100<th or depth>40: return
    print(f"{'  '*depth}{t/total*100:5.2f}% self {dt.get(nid,0)/total*100:4.2f} {key(nodes[nid])}")
    for c in sorted(nodes[nid].get('children',[]),key=sub,reverse=True): show(c,depth+1)
root=[n for n in p['nodes'] if n['callFrame']['functionName']=='(root)'][0]
for c in root['children']:
    if key(nodes[c]).startswith(sys.argv[3] if len(sys.argv)>3 else 'process'): show(c,0)
