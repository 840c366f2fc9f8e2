#!/usr/bin/env python3
"""CPU time (user + system) of `cudatool tables --json LIB` per cached driver build, and the
relocation count it walked: the figures docs/PERFORMANCE.md reports for issue #9 (goal: all four
tables of the 550 build in under 50 ms of CPU).

    python3 bench/tables_cpu.py [--runs N]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import Ctx  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=30)
    a = ap.parse_args()
    ctx = Ctx()
    print("| file | relocations walked | cudatool tables --json: CPU (user + system), mean of %d | wall, median "
          "| readelf -r -W: CPU | wall |" % a.runs)
    print("|---|---:|---:|---:|---:|---:|")
    for version, lib in ctx.drivers:
        walked = json.loads(subprocess.run([ctx.cudatool, "tables", "--json", lib], capture_output=True,
                                           text=True).stdout)["relocations"]["walked"]
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tf:
            out = tf.name
        subprocess.run(["hyperfine", "-N", "--style", "none", "--warmup", "3", "--runs", str(a.runs),
                        "--export-json", out, " ".join([ctx.cudatool, "tables", "--json", lib]),
                        " ".join(["readelf", "-r", "-W", lib])],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out) as f:
            r, b = json.load(f)["results"]
        os.unlink(out)
        ms = lambda x: "%.1f ms" % (x * 1e3)
        print("| %s | %d | %s | %s | %s | %s |" % (version, walked, ms(r["user"] + r["system"]), ms(r["median"]),
                                                  ms(b["user"] + b["system"]), ms(b["median"])))


if __name__ == "__main__":
    main()
