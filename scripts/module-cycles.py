#!/usr/bin/env python3
"""Module dependency cycles inside each crate (issue 19: "no module cycle inside any crate").

For every crate under crates/, a module is a file or directory directly under src/ (lib.rs and
main.rs are the crate root, not modules); inside a directory module, its child files are modules
too, at their level (mod.rs is the parent, whose items the children may use). An edge A -> B is
any `crate::B` (or `super::B` between siblings) path in A's non-test code. Prints every cycle of
top-level modules and of sibling modules and exits 1 if there is one.
usage: scripts/module-cycles.py [CRATE_DIR...]
"""
import os, re, sys

def strip_tests(text):
    # Everything from the first `#[cfg(test)]` at column 0 on is test code.
    m = re.search(r'^#\[cfg\(test\)\]', text, re.M)
    text = text[:m.start()] if m else text
    # Comments and doc comments name modules without depending on them.
    return re.sub(r'//[^\n]*', '', text)

def test_only(src):
    """Files of modules declared under `#[cfg(test)]` (`#[cfg(test)] mod tests;`): test code."""
    out = set()
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith('.rs'):
                continue
            text = open(os.path.join(root, f)).read()
            here = root if f in ('mod.rs', 'lib.rs', 'main.rs') else os.path.join(root, f[:-3])
            for m in re.finditer(r'#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod (\w+);', text):
                out.add(os.path.join(here, m.group(1) + '.rs'))
                out.add(os.path.join(here, m.group(1)))
    return out

def modules(src):
    """{module name: [files]} for the top-level modules of a crate (test-only files left out)."""
    skip = test_only(src)
    mods = {}
    for e in sorted(os.listdir(src)):
        p = os.path.join(src, e)
        if e in ('lib.rs', 'main.rs') or p in skip:
            continue
        if e.endswith('.rs'):
            mods.setdefault(e[:-3], []).append(p)
        elif os.path.isdir(p):
            for root, _, files in os.walk(p):
                if any(root == d or root.startswith(d + os.sep) for d in skip):
                    continue
                for f in files:
                    q = os.path.join(root, f)
                    if f.endswith('.rs') and q not in skip:
                        mods.setdefault(e, []).append(q)
    return mods

def cycles(graph):
    found, seen = [], set()
    def dfs(n, path):
        for m in sorted(graph.get(n, ())):
            if m in path:
                c = path[path.index(m):]
                key = frozenset(c)
                if key not in seen:
                    seen.add(key)
                    found.append(c + [m])
            else:
                dfs(m, path + [m])
    for n in sorted(graph):
        dfs(n, [n])
    return found

def edges(files, names, pattern):
    out = set()
    for f in files:
        text = strip_tests(open(f).read())
        for m in re.finditer(pattern, text):
            if m.group(1) in names:
                out.add(m.group(1))
    return out

bad = 0
crates = sys.argv[1:] or sorted(os.path.join('crates', c) for c in os.listdir('crates'))
for crate in crates:
    src = os.path.join(crate, 'src')
    if not os.path.isdir(src):
        continue
    mods = modules(src)
    names = set(mods)
    graph = {a: edges(fs, names, r'crate::(\w+)') - {a} for a, fs in mods.items()}
    for c in cycles(graph):
        bad += 1
        print(f'{crate}: cycle ' + ' -> '.join(c))
    # Siblings inside each directory module.
    for e in sorted(os.listdir(src)):
        d = os.path.join(src, e)
        if not os.path.isdir(d):
            continue
        skip = test_only(src)
        kids = {f[:-3]: [os.path.join(d, f)] for f in os.listdir(d)
                if f.endswith('.rs') and f != 'mod.rs' and os.path.join(d, f) not in skip}
        for sub in os.listdir(d):
            if os.path.isdir(os.path.join(d, sub)):
                kids.setdefault(sub, [])
                for root, _, files in os.walk(os.path.join(d, sub)):
                    kids[sub] += [os.path.join(root, f) for f in files if f.endswith('.rs')]
        kn = set(kids)
        g = {a: (edges(fs, kn, r'super::(\w+)') | edges(fs, kn, r'crate::' + e + r'::(\w+)')) - {a}
             for a, fs in kids.items()}
        for c in cycles(g):
            bad += 1
            print(f'{crate}: cycle in {e}/: ' + ' -> '.join(c))
print(f'module cycles: {bad}')
sys.exit(1 if bad else 0)
