#!/usr/bin/env python3
"""Fails when source files of a preload shim call each other in a circle.

    check_shim_calls.py OBJ...     the object files of one shim (as the build made them)
    check_shim_calls.py --self-test

The shims (src/record/preload/, src/replay/shim/, over src/record/shim_rt/) are layered by file:
the runtime at the bottom, then each behaviour's state, output or log, its start-up and fork
handling, and the behaviour on top; a file calls only files below it (replay_shim.h and
preload/shim.h list the order). This reads the object files with nm: file A calls file B when A
uses a symbol that B defines. A circle (A calls B, B calls A, directly or through others) is
listed with the symbols that make each of its edges, and the check exits 1. --self-test compiles
two small C files that call each other and checks that the circle is found (exit 0 when it is).
"""
import os
import subprocess
import sys
import tempfile


def source_name(obj):
    name = os.path.basename(obj)
    return name[:-2] if name.endswith(".o") else name


def read_symbols(objs):
    defined, used = {}, {}
    for obj in objs:
        name = source_name(obj)
        out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "U":
                used.setdefault(name, set()).add(parts[1])
            elif len(parts) == 3 and parts[1] in "TDBRVWCG":
                defined.setdefault(parts[2], name)
    return defined, used


def call_graph(objs):
    defined, used = read_symbols(objs)
    edges = {}
    for name, symbols in used.items():
        for sym in symbols:
            callee = defined.get(sym)
            if callee is not None and callee != name:
                edges.setdefault(name, {}).setdefault(callee, set()).add(sym)
    return edges


def circles(edges):
    """The strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    nodes = set(edges) | {w for ws in edges.values() for w in ws}
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return found


def check(objs):
    edges = call_graph(objs)
    found = circles(edges)
    for comp in found:
        print("check_shim_calls: these files call each other: " + ", ".join(comp))
        for a in comp:
            for b, syms in sorted(edges.get(a, {}).items()):
                if b in comp:
                    print("  %s -> %s (%s)" % (a, b, ", ".join(sorted(syms)[:4])))
    if not found:
        print("check_shim_calls: %d files, no circle" % len({source_name(o) for o in objs}))
    return 1 if found else 0


def self_test():
    with tempfile.TemporaryDirectory(prefix="check-shim-calls-") as d:
        files = {"a.c": "int b(void);\nint a(void) { return b(); }\n",
                 "b.c": "int a(void);\nint b(void) { return a() + 1; }\n",
                 "c.c": "int a(void);\nint c(void) { return a(); }\n"}
        objs = []
        for name, text in files.items():
            src = os.path.join(d, name)
            with open(src, "w") as f:
                f.write(text)
            obj = src + ".o"  # named as CMake names them: a.c.o
            subprocess.run(["cc", "-c", "-o", obj, src], check=True)
            objs.append(obj)
        found = circles(call_graph(objs))
        if found != [["a.c", "b.c"]]:
            print("check_shim_calls --self-test: expected the circle a.c, b.c, found %r" % found)
            return 1
        print("check_shim_calls --self-test: the planted circle a.c <-> b.c is found")
        return 0


def main():
    args = sys.argv[1:]
    if args == ["--self-test"]:
        return self_test()
    if not args:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
