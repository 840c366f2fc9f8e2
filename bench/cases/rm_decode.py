"""Issue #6 (knowledge base and decoders): decoding a real capture. cudatool's side is the
decoder pipeline of bench/rm_decode_bench.cpp (xz, JSON lines, trace::decode_event, one text line per
event; the `decode` command adds only the trace reader); the baseline is a Python decoder using the
same committed tables (bench/baselines/rm_decode_python.py), which decodes less (no parameter
structures). Events per second of the decoder alone come from the Google Benchmark binary
(`build-bench/bench/rm_decode_bench`), reported in docs/PERFORMANCE.md."""
import os


def cases(ctx):
    bench = None
    for d in ("build-bench", "build"):
        p = os.path.join(ctx.root, d, "bench", "rm_decode_bench")
        if os.path.exists(p):
            bench = p
            break
    # The real captures ship in tests/data/captures ($CUDATOOL_CAPTURES overrides).
    captures = os.environ.get("CUDATOOL_CAPTURES") or os.path.join(ctx.root, "tests", "data", "captures")
    if not os.path.exists(os.path.join(captures, "trace_a.jsonl.xz")):
        captures = None
    if bench is None or captures is None:
        return []
    trace = os.path.join(captures, "trace_a.jsonl.xz")
    return [{
        "name": "decode a capture (753 events)", "file": "trace_a",
        "cudatool": [bench, "--decode-capture", trace],
        "baselines": {
            "python + tables": [ctx.python, os.path.join(ctx.root, "bench", "baselines",
                                                        "rm_decode_python.py"),
                                os.path.join(ctx.root, "src", "rm", "generated", "r580"), trace],
        },
    }]
