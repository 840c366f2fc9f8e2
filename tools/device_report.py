#!/usr/bin/env python3
"""What a recording of a CUDA program holds, in the figures of issue #13's device check.

    python3 tools/device_report.py TRACE [TRACE...] [--cudatool PATH] [--api-lib GLOB] [--json]

For each trace (a `cudatool trace` recording, or an imported capture), through `cudatool decode
--json` and `cudatool stats --json` (nothing is parsed here that cudatool does not decode):

- RM allocs (NV_ESC_RM_ALLOC) that pass paramsSize 0 with a parameter pointer, and how many of
  them have their allocation parameters recorded and decoded (and why the others do not: the
  decoder's "unrecorded" notes); allocs wrapped in NV_ESC_IOCTL_XFER_CMD are counted apart
  (`xfer_wrapped`: decode does not decode their allocation parameters; libcuda 580's run of
  work.c made none);
- the second-level buffers of NV2080_CTRL_CMD_GR_GET_INFO (params.grInfoList: element count)
  and NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION (the three strings);
- the device calls made during a CUDA API call (stats' api_calls: attributed / with a stack /
  all), the API calls by device calls;
- the environment the program looked at (stats' environment: events, by call, by path).

tools/device-check.sh runs it on the device machine's recordings of work.c; it runs as well on
any trace (the tests' fixtures, the committed captures, where it says what they lack).
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("device_report: %s failed (%d): %s" % (" ".join(cmd), p.returncode, p.stderr.strip()))
    return p.stdout


def run_json_lines(cmd):
    return [json.loads(line) for line in run(cmd).splitlines() if line.strip()]


def arg(ev, name):
    for a in ev.get("args") or []:
        if a.get("name") == name:
            return a.get("value")
    return None


def as_int(v):
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        try:
            return int(v, 0)
        except ValueError:
            return None
    return None


def report(cudatool, trace, api_lib):
    extra = ["--api-lib", api_lib] if api_lib else []
    lines = run_json_lines([cudatool, "decode", trace, "--json"] + extra)
    if not lines or "schema" not in lines[0]:
        sys.exit("device_report: %s: no decode header" % trace)
    head, events = lines[0], [e for e in lines[1:] if "seq" in e]
    stats = json.loads(run([cudatool, "stats", trace, "--json"] + extra))

    allocs = [e for e in events if e.get("call") == "NV_ESC_RM_ALLOC"]
    xfer_allocs = [e for e in events if e.get("call") == "NV_ESC_IOCTL_XFER_CMD" and e.get("h_class")]
    with_ptr = [e for e in allocs
                if as_int(arg(e, "paramsSize")) == 0 and (as_int(arg(e, "pAllocParms")) or 0) != 0]
    recorded = [e for e in with_ptr if e.get("params")]
    why = {}
    for e in with_ptr:
        if e.get("params"):
            continue
        for u in e.get("unrecorded") or [{"why": "(no reason given)"}]:
            text = u.get("why", json.dumps(u)) if isinstance(u, dict) else str(u)
            text = text.split(" (")[0]  # the class's size follows: one line per reason
            why[text] = why.get(text, 0) + 1
    by_struct = {}
    for e in recorded:
        s = e.get("params_struct") or "?"
        by_struct[s] = by_struct.get(s, 0) + 1

    def pointees(cmd):
        out = []
        selected = run_json_lines([cudatool, "decode", trace, "--json", "--filter", "cmd=" + cmd] + extra)
        for e in selected:
            if "seq" not in e:
                continue
            out.append({"seq": e["seq"], "status": e.get("status_name"),
                        "pointees": [{"role": p.get("role"),
                                      "elements": len(p["value"]) if isinstance(p.get("value"), list) else None,
                                      "value": p.get("value") if isinstance(p.get("value"), str) else None}
                                     for p in e.get("pointees") or []],
                        "unrecorded": e.get("unrecorded") or []})
        return out

    api = stats.get("api_calls")
    env = stats.get("environment") or {}
    return {
        "trace": trace,
        "driver_version": head.get("driver_version"),
        "events": len(events),
        "allocs": {"all": len(allocs), "xfer_wrapped": len(xfer_allocs),
                   "params_size_0_with_pointer": len(with_ptr),
                   "recorded": len(recorded), "by_struct": by_struct, "not_recorded_because": why},
        "gr_get_info": pointees("NV2080_CTRL_CMD_GR_GET_INFO"),
        "build_version": pointees("NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION"),
        "api_calls": None if api is None else {
            "device_calls": api.get("device_calls"), "with_stack": api.get("with_stack"),
            "attributed": api.get("attributed"), "outside_api": api.get("outside_api"),
            "rows": [{"api": r["api"], "device_calls": r["device_calls"]} for r in api.get("rows", [])]},
        "environment": {"events": env.get("events", 0),
                        "by_call": [{"name": r["name"], "count": r["count"]} for r in env.get("by_call", [])],
                        "by_path": [{"name": r["name"], "count": r["count"]} for r in env.get("by_path", [])]},
    }


def text(r):
    out = ["%s: %d events, driver %s" % (r["trace"], r["events"], r["driver_version"] or "not named")]
    a = r["allocs"]
    out.append("  RM allocs: %d, %d with paramsSize 0 and a parameter pointer, parameters recorded for %d"
               % (a["all"], a["params_size_0_with_pointer"], a["recorded"]))
    if a["xfer_wrapped"]:
        out.append("    and %d wrapped in NV_ESC_IOCTL_XFER_CMD (not assessed)" % a["xfer_wrapped"])
    for s, n in sorted(a["by_struct"].items(), key=lambda x: -x[1]):
        out.append("    %5d  %s" % (n, s))
    for w, n in sorted(a["not_recorded_because"].items(), key=lambda x: -x[1]):
        out.append("    not recorded (%d): %s" % (n, w))
    for key, title in (("gr_get_info", "NV2080_CTRL_CMD_GR_GET_INFO"),
                       ("build_version", "NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION")):
        calls = r[key]
        out.append("  %s: %d call(s)" % (title, len(calls)))
        for c in calls:
            parts = []
            for p in c["pointees"]:
                if p["elements"] is not None:
                    parts.append("%s: %d elements" % (p["role"], p["elements"]))
                else:
                    parts.append("%s: %s" % (p["role"], json.dumps(p["value"])))
            if not parts:
                parts.append("nothing behind its pointers" +
                             (" (%s)" % "; ".join("%s: %s" % (u.get("what"), u.get("why")) if isinstance(u, dict)
                                                  else str(u) for u in c["unrecorded"])
                              if c["unrecorded"] else ""))
            out.append("    #%d %s: %s" % (c["seq"], c["status"], ", ".join(parts)))
    api = r["api_calls"]
    if api is None:
        out.append("  API calls: the trace has no stacks")
    else:
        out.append("  device calls during a CUDA API call: %d of %d (%d with a stack, %d outside any)"
                   % (api["attributed"], api["device_calls"], api["with_stack"], api["outside_api"]))
        for row in api["rows"][:12]:
            out.append("    %5d  %s" % (row["device_calls"], row["api"]))
    env = r["environment"]
    out.append("  environment events: %d" % env["events"])
    for row in env["by_call"]:
        out.append("    %5d  %s" % (row["count"], row["name"]))
    for row in env["by_path"][:20]:
        out.append("    %5d  %s" % (row["count"], row["name"]))
    if len(env["by_path"]) > 20:
        out.append("    … %d paths more (--json lists them)" % (len(env["by_path"]) - 20))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--cudatool", default=os.path.join(ROOT, "build", "cudatool"))
    ap.add_argument("--api-lib", help="the library whose exports are the API (default: libcuda)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if not os.access(a.cudatool, os.X_OK):
        sys.exit("device_report: no cudatool at %s (--cudatool PATH)" % a.cudatool)
    reports = []
    for t in a.traces:
        if not os.path.exists(t):
            sys.exit("device_report: %s: no such file" % t)
        reports.append(report(a.cudatool, t, a.api_lib))
    if a.json:
        print(json.dumps({"schema": "cudatool.device-report/1", "traces": reports}, indent=1))
    else:
        print("\n\n".join(text(r) for r in reports))


if __name__ == "__main__":
    main()
