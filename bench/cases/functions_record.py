"""Issue #31: function-level recording of the real libcuda 580 under `cudatool replay`, from cuInit
to the primary context (cuda_probe ctx): `replay --functions` (every function the patch plan can
patch, into the -o trace) against Debian's uftrace 0.13 recording the same replay with
cudatool's symbols (`symbolize --format uftrace`), and plain `replay -o` as the floor. Needs the
unpacked libcuda 580 (build/real-data/, which the tests unpack from ../shared/data) and uftrace;
the case is left out without them."""
import os
import shutil
import subprocess
import tempfile


def cases(ctx):
    lib = os.path.join(ctx.root, "build", "real-data", "libcuda.so.580.159.04")
    probe = os.path.join(os.path.dirname(ctx.cudatool), "cuda_probe")
    cap = os.path.join(ctx.root, "tests", "data", "captures", "trace_a.jsonl.xz")
    if not (os.path.exists(lib) and os.path.exists(probe) and shutil.which("uftrace")):
        return []
    work = tempfile.mkdtemp(prefix="cudatool-bench-functions-")
    trace = os.path.join(work, "a.jsonl")
    subprocess.run([ctx.cudatool, "import", cap, "-o", trace, "--driver-version", "580.159.04"],
                   check=True, stdout=subprocess.DEVNULL)
    syms = os.path.join(work, "syms")
    subprocess.run([ctx.cudatool, "symbolize", lib, "--format", "uftrace", "-o", syms], check=True,
                   stdout=subprocess.DEVNULL)
    replay = [ctx.cudatool, "replay", trace, "-q", "--deadline", "60"]
    out = os.path.join(work, "f.jsonl")
    return [{
        "name": "replay cuInit..primary context, every libcuda function recorded", "file": "libcuda 580",
        "runs": 3, "warmup": 1, "exit_ok": True,  # replay says 1: the recording's deviations
        "cudatool": replay + ["--functions", "-o", out, "--force", "--", probe, lib, "ctx"],
        "baselines": {
            "uftrace 0.13 record -P .@libcuda.so.1 --with-syms (same replay)":
                replay + ["--", "uftrace", "record", "--force", "-d", os.path.join(work, "u"),
                          "-P", ".@libcuda.so.1", "--with-syms", syms, probe, lib, "ctx"],
            "replay -o without --functions":
                replay + ["-o", os.path.join(work, "plain.jsonl"), "--force", "--", probe, lib, "ctx"],
        },
    }]
