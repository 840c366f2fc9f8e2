"""Issue #4: `delta` and `history` against what a user would run instead: the single-version
commands on both files (whose JSON a script would then compare), and a plain textual diff of
readelf's symbol tables (which sees only exports, and every moved address as a change)."""


def cases(ctx):
    libs = dict(ctx.drivers)
    a, b = libs.get("550.163.01"), libs.get("555.58.02")
    out = []
    if a and b:
        singles = " && ".join(
            "{t} {c} --json {f} >/dev/null".format(t=ctx.cudatool, c=c, f=f)
            for f in (a, b) for c in ("info", "exports", "imports", "functions", "cubins", "tables"))
        out.append({
            "name": "delta 550 → 555", "file": "550, 555", "shell": True,
            "cudatool": "{t} delta {a} {b} >/dev/null; true".format(t=ctx.cudatool, a=a, b=b),
            "baselines": {
                "the six single-version commands on both": singles,
                "diff of readelf --dyn-syms": "diff <(readelf --dyn-syms -W {a}) <(readelf --dyn-syms -W {b}) >/dev/null; true".format(a=a, b=b),
            },
        })
        out.append({
            "name": "delta --fast 550 → 555", "file": "550, 555", "shell": True,
            "cudatool": "{t} delta --fast {a} {b} >/dev/null; true".format(t=ctx.cudatool, a=a, b=b),
            "baselines": {
                "diff of readelf --dyn-syms": "diff <(readelf --dyn-syms -W {a}) <(readelf --dyn-syms -W {b}) >/dev/null; true".format(a=a, b=b),
            },
        })
    paths = [p for _, p in ctx.drivers]
    if len(paths) >= 4:
        out.append({
            "name": "history (4 builds vs 2: scaling)", "file": "all", "shell": True,
            "cudatool": "{t} history {p} >/dev/null 2>&1".format(t=ctx.cudatool, p=" ".join(paths)),
            "baselines": {
                "history of 2 builds": "{t} history {p} >/dev/null 2>&1".format(t=ctx.cudatool, p=" ".join(paths[2:])),
            },
        })
    return out
