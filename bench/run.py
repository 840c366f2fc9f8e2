#!/usr/bin/env python3
"""Benchmarks cudatool against the tools a user would use instead, in one hyperfine run per case.

    python3 bench/run.py [--cases GLOB] [--runs N] [--markdown OUT.md]

Every bench/cases/*.py defines `cases(ctx)` returning a list of dicts:
    {"name": "info (sections + notes)", "file": "550.163.01",
     "cudatool": [argv...], "baselines": {"readelf -S -n -W": [argv...], ...},
     "shell": False,   # shell=True: argv is one string run by /bin/sh
     "rss": {"label": [argv...], ...},  # optional: run each once more, report peak RSS
     "exit_ok": True}  # optional: a non-zero exit status is a finding (replay's 1), not a failure
Each case runs its cudatool command and all its baselines in one hyperfine invocation (same
machine state), and reports medians and the ratio baseline / cudatool (>1: cudatool is faster).
Nothing here asserts a time. Uses build-bench/ (Release) when built, else build/.
"""
import argparse
import glob
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Ctx:
    def __init__(self):
        for d in ("build-bench", "build"):
            b = os.path.join(ROOT, d, "cudatool")
            if os.path.exists(b):
                self.cudatool = b
                break
        else:
            sys.exit("bench: build cudatool first (cmake --preset bench && cmake --build --preset bench)")
        self.root = ROOT
        self.drivers_dir = os.environ.get("CUDATOOL_DRIVERS", os.path.expanduser("~/.cache/cudatool/drivers"))
        self.drivers = []  # (version, path)
        with open(os.path.join(ROOT, "tools", "drivers.list")) as f:
            for line in f:
                if not line.strip() or line.startswith("#"):
                    continue
                pkg, ver, _ = line.split()
                v = ver.split("-")[0]
                p = os.path.join(self.drivers_dir, "libcuda.so." + v)
                if os.path.exists(p):
                    self.drivers.append((v, p))
        self.python = "/usr/bin/python3"  # Debian's, which has python3-pyelftools

    def driver(self, version):
        for v, p in self.drivers:
            if v == version:
                return p
        return None


def fmt_time(s):
    if s < 1e-3:
        return "%.0f µs" % (s * 1e6)
    if s < 1:
        return "%.2f ms" % (s * 1e3) if s < 0.01 else "%.1f ms" % (s * 1e3)
    return "%.2f s" % s


ALL_CPUS = None  # the CPUs the bench may use, before it pins itself (main)


def run_case(case, runs):
    cmds = [("cudatool", case["cudatool"])] + list(case["baselines"].items())
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tf:
        out = tf.name
    argv = ["hyperfine", "--style", "none", "--export-json", out, "--runs", str(case.get("runs", runs)),
            "--warmup", str(case.get("warmup", 3))]
    if case.get("exit_ok"):  # commands whose exit status is a finding, not a failure (replay: 1)
        argv.append("--ignore-failure")
    if not case.get("shell"):
        argv.append("-N")
    else:
        argv += ["--shell", "bash"]  # cases may use bash's <(…)
    names = []
    for label, cmd in cmds:
        argv += ["--command-name", label]
        names.append(label)
    for label, cmd in cmds:
        argv.append(cmd if isinstance(cmd, str) else " ".join(shlex_quote(a) for a in cmd))
    # A case that says "all_cpus" (a command that uses two threads, against a baseline that uses
    # one) runs on every CPU the bench was given, not on the pinned one.
    pinned = os.sched_getaffinity(0)
    if case.get("all_cpus"):
        os.sched_setaffinity(0, ALL_CPUS)
    try:
        r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    finally:
        os.sched_setaffinity(0, pinned)
    if r.returncode != 0:
        print("bench: %s failed:\n%s" % (case["name"], r.stderr), file=sys.stderr)
        return None
    with open(out) as f:
        res = json.load(f)["results"]
    os.unlink(out)
    return {label: x["median"] for label, x in zip(names, res)}


def peak_rss_mib(argv):
    """Peak resident set size of one run of argv, from wait4's rusage (KiB on Linux)."""
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, ru = os.wait4(p.pid, 0)
    return ru.ru_maxrss / 1024.0


def shlex_quote(a):
    import shlex
    return shlex.quote(a)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="*", help="glob over bench/cases/*.py names")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--markdown", help="also write the table to this file")
    ap.add_argument("--cpu", default="last",
                    help="pin hyperfine and the commands to one CPU: a number, 'last' (default) or "
                         "'none'. On these VMs a wake-up across vCPUs costs more than the fast "
                         "commands themselves and makes medians jump to the 4 ms scheduler tick")
    a = ap.parse_args()
    global ALL_CPUS
    ALL_CPUS = os.sched_getaffinity(0)
    if a.cpu != "none":
        cpus = sorted(os.sched_getaffinity(0))
        cpu = cpus[-1] if a.cpu == "last" else int(a.cpu)
        os.sched_setaffinity(0, {cpu})
        print("bench: pinned to CPU %d" % cpu, file=sys.stderr)
    if not shutil.which("hyperfine"):
        sys.exit("bench: hyperfine is required (tools/install-deps.sh installs it)")
    ctx = Ctx()
    rows = []
    notes = []
    for path in sorted(glob.glob(os.path.join(ROOT, "bench", "cases", a.cases + ".py"))):
        spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for case in mod.cases(ctx):
            t = run_case(case, a.runs)
            if t is None:
                continue
            base = t["cudatool"]
            for label in case["baselines"]:
                rows.append((case["name"], case.get("file", ""), fmt_time(base), label, fmt_time(t[label]),
                             "%.1fx" % (t[label] / base) if base > 0 else "-"))
            print("bench: %-40s %-12s cudatool %s" % (case["name"], case.get("file", ""), fmt_time(base)),
                  file=sys.stderr)
            for label, argv in case.get("rss", {}).items():
                notes.append("peak RSS of %s (%s, %s): %.0f MiB" % (label, case["name"], case.get("file", ""),
                                                                    peak_rss_mib(argv)))
    md = ["| case | file | cudatool | baseline | baseline time | baseline / cudatool |",
          "|---|---|---:|---|---:|---:|"]
    # A '|' inside a cell (a shell pipeline as a baseline's label) would end the cell.
    md += ["| %s |" % " | ".join(str(c).replace("|", "\\|") for c in r) for r in rows]
    text = "\n".join(md) + "\n"
    if notes:
        text += "\n" + "\n".join("- " + n for n in notes) + "\n"
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
