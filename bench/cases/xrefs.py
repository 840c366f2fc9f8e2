"""Issue #16: the cross-reference index. `index` (the whole index written as SQLite) and one
`xrefs` query from a fresh process against `objdump -d`, which a user would otherwise run (and
then grep) to find call sites; and one query on the SQLite file with the sqlite3 CLI. On the
550 build and on 580.159.04 from ../shared/data (unpacked beside the cudatool binary the bench
uses, in real-data/ as the tests do), the 96 MB build with 35,417 FDEs. objdump takes tens of seconds on 580, so
those cases run 3 times after one warmup. Peak RSS of `index` and `objdump -d` is reported once."""
import os
import subprocess
import sys


def shared_580(ctx):
    """The 580 build as the test harness finds it: $CUDATOOL_SHARED_DATA when set (then only
    there), else ../shared/data beside the tree or beside a worktree one level deeper; unpacked
    once into <build>/real-data beside the cudatool binary used."""
    name = "libcuda.so.580.159.04"
    env = os.environ.get("CUDATOOL_SHARED_DATA", "")
    dirs = [env] if env else [os.path.join(ctx.root, "..", "shared", "data"),
                              os.path.join(ctx.root, "..", "..", "shared", "data")]
    src = next((os.path.join(d, name + ".xz") for d in dirs if os.path.exists(os.path.join(d, name + ".xz"))),
               None)
    if src is None:
        print("bench: xrefs: %s.xz not found (set CUDATOOL_SHARED_DATA); 580 cases left out" % name,
              file=sys.stderr)
        return None
    dest_dir = os.path.join(os.path.dirname(ctx.cudatool), "real-data")
    dest = os.path.join(dest_dir, name)
    if not os.path.exists(dest) or os.path.getmtime(dest) < os.path.getmtime(src):
        os.makedirs(dest_dir, exist_ok=True)
        tmp = "%s.tmp.%d" % (dest, os.getpid())
        with open(tmp, "wb") as f:
            subprocess.run(["xz", "-dc", src], stdout=f, check=True)
        os.rename(tmp, dest)
    return dest


def cases(ctx):
    out = []
    libs = [(v, p) for v, p in ctx.drivers if v == "550.163.01"]
    p580 = shared_580(ctx)
    if p580:
        libs.append(("580.159.04", p580))
    for version, lib in libs:
        slow = version.startswith("580")
        runs = {"runs": 3, "warmup": 1} if slow else {}
        db = "/tmp/cudatool-bench-xrefs-%s.sqlite" % version
        objdump = "objdump -d --no-show-raw-insn %s > /dev/null" % lib
        out.append(dict(runs, **{
            "name": "index (whole index → SQLite)", "file": version, "shell": True,
            "cudatool": "%s index %s -o %s > /dev/null" % (ctx.cudatool, lib, db),
            "baselines": {"objdump -d": objdump},
            "rss": {"cudatool index": [ctx.cudatool, "index", lib, "-o", db],
                    "objdump -d": ["objdump", "-d", "--no-show-raw-insn", lib]},
        }))
        out.append(dict(runs, **{
            "name": "xrefs LIB ioctl (fresh process)", "file": version, "shell": True,
            "cudatool": "%s xrefs %s ioctl > /dev/null" % (ctx.cudatool, lib),
            "baselines": {"objdump -d | grep '<ioctl@plt>'":
                          "objdump -d --no-show-raw-insn %s | grep -c '<ioctl@plt>' > /dev/null" % lib},
        }))
        subprocess.run([ctx.cudatool, "index", lib, "-o", db], stdout=subprocess.DEVNULL, check=True)
        out.append({
            "name": "sqlite3 FILE: ioctl call sites", "file": version, "shell": True,
            "cudatool": "sqlite3 %s \"SELECT count(*) FROM import_calls WHERE import = 'ioctl'\" > /dev/null" % db,
            "baselines": {"cudatool xrefs LIB ioctl": "%s xrefs %s ioctl > /dev/null" % (ctx.cudatool, lib)},
        })
    return out
