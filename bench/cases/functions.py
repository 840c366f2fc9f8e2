"""Issue #3: `functions` (the function map from .eh_frame, cross-checked with .eh_frame_hdr)
against readelf / eu-readelf --debug-dump=frames, which decode the same records, and
pyelftools' EH_CFI_entries(). pyelftools takes ~30 s and ~1.6 GiB on one build, so it runs
once, on the 550 build, with one run and no warmup (for cudatool too, in that case).

Two cudatool rows per build: `functions --names exports` is the map itself (what the frame dumps
compare with: every FDE, checked against .eh_frame_hdr, export names); plain `functions` also
recovers libcuda's routing tables (cuGetProcAddress, export tables, dispatch) to name ~2,000 more
functions, which none of the baselines does."""


def cases(ctx):
    out = []
    for version, lib in ctx.drivers:
        baselines = {
            "readelf --debug-dump=frames": ["readelf", "--debug-dump=frames", lib],
            "eu-readelf --debug-dump=frames": ["eu-readelf", "--debug-dump=frames", lib],
        }
        out.append({"name": "functions --names exports (the map)", "file": version,
                    "cudatool": [ctx.cudatool, "functions", "--names", "exports", lib],
                    "baselines": baselines})
        out.append({"name": "functions (+ routing-table names)", "file": version,
                    "cudatool": [ctx.cudatool, "functions", lib],
                    "baselines": baselines})
    lib = ctx.driver("550.163.01")
    if lib:
        out.append({
            "name": "functions --json", "file": "550.163.01",
            "cudatool": [ctx.cudatool, "functions", "--json", lib],
            "baselines": {"readelf --debug-dump=frames": ["readelf", "--debug-dump=frames", lib]},
        })
        out.append({
            "name": "addr (2 addresses)", "file": "550.163.01",
            "cudatool": [ctx.cudatool, "addr", lib, "0xe0ad5", "0x2a3b47"],
            "baselines": {"readelf --debug-dump=frames": ["readelf", "--debug-dump=frames", lib]},
        })
        out.append({
            "name": "functions (pyelftools: 1 run, no warmup)", "file": "550.163.01",
            "runs": 1, "warmup": 0,
            "cudatool": [ctx.cudatool, "functions", "--names", "exports", lib],
            "baselines": {
                "pyelftools EH_CFI_entries()":
                    [ctx.python, ctx.root + "/bench/baselines/pyelftools_eh_frame.py", lib],
            },
        })
    return out
