"""Issue #2: info and exports against readelf, eu-readelf and pyelftools."""


def cases(ctx):
    out = []
    for version, lib in ctx.drivers:
        out.append({
            "name": "info (identity, layout, notes)", "file": version,
            "cudatool": [ctx.cudatool, "info", lib],
            "baselines": {"readelf -S -n -W": ["readelf", "-S", "-n", "-W", lib]},
        })
        out.append({
            "name": "info --json", "file": version,
            "cudatool": [ctx.cudatool, "info", "--json", lib],
            "baselines": {"readelf -S -n -W": ["readelf", "-S", "-n", "-W", lib]},
        })
        out.append({
            "name": "exports", "file": version,
            "cudatool": [ctx.cudatool, "exports", lib],
            "baselines": {
                "eu-readelf --dyn-syms": ["eu-readelf", "--dyn-syms", lib],
                "readelf --dyn-syms -W": ["readelf", "--dyn-syms", "-W", lib],
                "pyelftools": [ctx.python, ctx.root + "/bench/baselines/pyelftools_dynsyms.py", lib],
            },
        })
    return out
