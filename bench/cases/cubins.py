"""Issue #8: cudatool cubins (scan + full decode of every embedded image) against the plain Python
magic scan of bench/baselines/elf_magic_scan.py and, when installed (apt-get install binwalk),
binwalk's default signature scan, which finds no cubins at all."""
import shutil


def cases(ctx):
    out = []
    for version, lib in ctx.drivers:
        baselines = {
            "python magic scan": [ctx.python, ctx.root + "/bench/baselines/elf_magic_scan.py", lib],
        }
        out.append({
            "name": "cubins (scan + decode, table)", "file": version,
            "cudatool": [ctx.cudatool, "cubins", lib],
            "baselines": baselines,
        })
        out.append({
            "name": "cubins --summary", "file": version,
            "cudatool": [ctx.cudatool, "cubins", "--summary", lib],
            "baselines": baselines,
        })
        out.append({
            "name": "cubins --json (every section, kernel)", "file": version,
            "cudatool": [ctx.cudatool, "cubins", "--json", lib],
            "baselines": baselines,
        })
        if version.startswith("550") and shutil.which("binwalk"):
            out.append({
                "name": "cubins --summary vs binwalk", "file": version,
                "cudatool": [ctx.cudatool, "cubins", "--summary", lib],
                "baselines": {"binwalk (default scan)": ["binwalk", lib]},
                "runs": 3, "warmup": 1,
            })
    return out
