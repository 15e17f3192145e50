#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The include graph stays a layered DAG (TAP output, run by make check).
# A module is dir/x (x.c + x.h); an edge is a quoted `#include "dir/y.h"`
# in one of its files. Checks, over the .c/.h files git tracks (or, in a
# tarball, the ones under the source tree):
#   1. no cycle between modules (Tarjan's SCC; each cycle is printed);
#   2. folders include only their own layer and those below it:
#        core    -> core
#        prof    -> core, prof           (the heap-profile model, pure)
#        heap    -> core, prof, heap     (the heap service: jemalloc, the
#                   datadir's dumps, loaded profiles; no SQL, no HTTP)
#        vtab    -> core, prof, heap, vtab  (SQLite tables over it)
#        engine  -> core, prof, heap, vtab, engine  (one instance under
#                   both front-ends: accounts, throttle, files, executor)
#        admin   -> core, prof, heap, vtab, engine, admin  (the MySQL
#                   front-end)
#        http    -> core, prof, heap, engine, http   (the HTTP front-end:
#                   never through the SQL tables' folder; the two
#                   front-ends never include each other)
#        api     -> all of the above, include (the public API's body)
#        include -> include              (the public header stands alone)
#        daemon, example -> include and their own folder only: the faces
#                   are thin mains over the public header
#        agent   -> include, agent and core: a guest in a host's fork
#                   children and threads, it also needs core's pieces made
#                   for that (the allocation-free directory walk, the
#                   clock), never the engine or anything above core
#        attach  -> include, attach and core: heapadmin-attach, a tool
#                   beside the agent, with core's allocation-free pieces
#        deps    -> deps
#        test, bench, docs -> anything (docs/gen reads every catalogue)
#   A folder with C files that is in neither list is reported too.
# Then it proves it can fail: the same checker on a synthetic tree with a
# cycle and an upward edge must report both.
#
# Usage: test/layering.sh [srcdir]     (default: $HA_TOP_SRCDIR or .)
#        test/layering.sh --check DIR  (checker only, on DIR; exit 1 on
#                                       a violation)
set -eu

checker() {
    python3 - "$1" <<'EOF'
import os, re, subprocess, sys

top = sys.argv[1]
ALLOWED = {
    'core': {'core'},
    'prof': {'core', 'prof'},
    'heap': {'core', 'prof', 'heap'},
    'vtab': {'core', 'prof', 'heap', 'vtab'},
    'engine': {'core', 'prof', 'heap', 'vtab', 'engine'},
    'admin': {'core', 'prof', 'heap', 'vtab', 'engine', 'admin'},
    'http': {'core', 'prof', 'heap', 'engine', 'http'},
    'api': {'core', 'prof', 'heap', 'vtab', 'engine', 'admin', 'http',
            'api', 'include'},
    'include': {'include'},
    'daemon': {'daemon', 'include'},
    'agent': {'agent', 'core', 'include'},
    'attach': {'attach', 'core', 'include'},
    'example': {'example', 'include'},
    'deps': {'deps'},
}
UPPER = set()
ANY = {'test', 'bench', 'docs'}

def files():
    try:
        out = subprocess.run(['git', '-C', top, 'ls-files', '*.c', '*.h'],
                             capture_output=True, text=True, check=True)
        names = [n for n in out.stdout.split('\n') if n]
        if names:
            return names
    except (OSError, subprocess.CalledProcessError):
        pass
    names = []
    for d, _, fs in os.walk(top):
        for f in fs:
            if f.endswith(('.c', '.h')):
                names.append(os.path.relpath(os.path.join(d, f), top))
    return names

inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
edges = {}       # module -> {module: "file:line"}
bad = []
for name in sorted(files()):
    if '/' not in name:
        continue
    src = os.path.splitext(name)[0]
    folder = name.split('/')[0]
    edges.setdefault(src, {})
    if folder not in ALLOWED and folder not in ANY:
        bad.append('%s: folder %s/ has no place in the layering; add it '
                   'to test/layering.sh' % (name, folder))
    try:
        text = open(os.path.join(top, name), errors='replace').read()
    except OSError:
        continue
    for n, line in enumerate(text.split('\n'), 1):
        m = inc.match(line)
        if not m or '/' not in m.group(1):
            continue
        dst = os.path.splitext(m.group(1))[0]
        dfolder = dst.split('/')[0]
        where = '%s:%d' % (name, n)
        if folder in ALLOWED and dfolder not in ALLOWED[folder]:
            bad.append('%s: %s includes %s (%s may include only %s)' % (
                where, folder, m.group(1), folder,
                ', '.join(sorted(ALLOWED[folder]))))
        elif folder in UPPER and dfolder in ANY:
            bad.append('%s: %s includes %s (test code)' % (
                where, folder, m.group(1)))
        if dst != src:
            edges[src].setdefault(dst, where)
            edges.setdefault(dst, {})

# Tarjan's strongly connected components, iteratively.
index, low, onstack, stack, sccs = {}, {}, set(), [], []
counter = [0]
for root in sorted(edges):
    if root in index:
        continue
    work = [(root, iter(sorted(edges[root])))]
    index[root] = low[root] = counter[0]; counter[0] += 1
    stack.append(root); onstack.add(root)
    while work:
        v, it = work[-1]
        for w in it:
            if w not in index:
                index[w] = low[w] = counter[0]; counter[0] += 1
                stack.append(w); onstack.add(w)
                work.append((w, iter(sorted(edges[w]))))
                break
            if w in onstack:
                low[v] = min(low[v], index[w])
        else:
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop(); onstack.discard(w); comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    sccs.append(sorted(comp))

def cycle_in(comp):
    """One concrete cycle through comp's first module, with the lines."""
    members = set(comp)
    start = comp[0]
    prev = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(edges[v]):
            if w not in members:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                path.reverse()
                path.append(start)
                return ' -> '.join(
                    '%s (%s)' % (a, edges[a][b])
                    for a, b in zip(path, path[1:])) + ' -> ' + start
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return ' '.join(comp)

for comp in sccs:
    print('cycle among %s: %s' % (', '.join(comp), cycle_in(comp)))
for b in bad:
    print('upward include: ' + b)
print('%d modules, %d edges, %d cycles, %d upward includes' % (
    len(edges), sum(len(e) for e in edges.values()), len(sccs), len(bad)))
sys.exit(1 if sccs or bad else 0)
EOF
}

if [ "${1:-}" = "--check" ]; then
    checker "$2"
    exit $?
fi

top=${1:-${HA_TOP_SRCDIR:-.}}
fail=0
echo "1..2"

# 1: the tree itself.
if out=$(checker "$top" 2>&1); then
    echo "ok 1 - include graph: no cycles, no upward includes"
    echo "$out" | sed 's/^/# /'
else
    echo "not ok 1 - include graph"
    echo "$out" | sed 's/^/# /'
    fail=1
fi

# 2: the checker fails on a tree that breaks both rules (not a git
# tree, so it walks the files).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/core" "$tmp/vtab" "$tmp/admin" "$tmp/heap" "$tmp/http" \
    "$tmp/agent"
printf '#include "admin/b.h"\n' > "$tmp/admin/a.c"
printf '#include "admin/a.h"\n' > "$tmp/admin/b.h"
printf '#include "admin/a.h"\n' > "$tmp/vtab/up.c"
printf '#include "vtab/up.h"\n' > "$tmp/heap/svc.c"
printf '#include "heap/svc.h"\n#include "vtab/up.h"\n' > "$tmp/http/page.c"
printf '#include "core/x.h"\n' > "$tmp/core/x.c"
printf '#include "core/x.h"\n#include "engine/e.h"\n' > "$tmp/agent/a.c"
if out=$(checker "$tmp" 2>&1); then
    echo "not ok 2 - checker misses a cycle and upward includes"
    fail=1
elif echo "$out" | grep -q '^cycle among admin/a, admin/b' &&
     echo "$out" | grep -q '^upward include: vtab/up.c:1' &&
     echo "$out" | grep -q '^upward include: heap/svc.c:1' &&
     echo "$out" | grep -q '^upward include: http/page.c:2' &&
     echo "$out" | grep -q '^upward include: agent/a.c:2' &&
     ! echo "$out" | grep -q 'http/page.c:1' &&
     ! echo "$out" | grep -q 'agent/a.c:1'; then
    echo "ok 2 - checker reports a synthetic cycle and upward includes (heap and http into vtab, the agent into engine)"
else
    echo "not ok 2 - checker failed for the wrong reason"
    fail=1
fi
echo "$out" | sed 's/^/# /'
exit $fail
