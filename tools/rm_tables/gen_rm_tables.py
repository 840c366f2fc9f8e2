#!/usr/bin/python3
"""Generates cudatool's NVIDIA kernel-ABI tables (src/rm/generated/) from NVIDIA's
open-gpu-kernel-modules sources, one directory per driver release.

    tools/rm_tables/gen_rm_tables.py --git-dir DIR --rev 580.142 [--rev 550.163.01 ...]
                                     [--out src/rm/generated] [--check] [--dump-json FILE]
    tools/rm_tables/gen_rm_tables.py --tree DIR --version 580.142 ...

--git-dir reads each release with `git archive` (a clone or a bare mirror with the release tags);
--tree reads an unpacked source tree of one release. Only names, numbers, sizes and offsets are
written; sizes and offsets come from compiling the release's own headers (rmprobe.py).
--check regenerates into a temporary directory and fails when the committed files differ.
Standard library only (Debian's /usr/bin/python3).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rmemit  # noqa: E402
import rmparse  # noqa: E402
import rmprobe  # noqa: E402
import rmptrs  # noqa: E402
import rmrules  # noqa: E402

SDK = "src/common/sdk/nvidia/inc"
UNIX_INC = "src/nvidia/arch/nvalloc/unix/include"
UNIX_SRC = "src/nvidia/arch/nvalloc/unix/src"
KOPEN_INC = "kernel-open/common/inc"
UVM_DIR = "kernel-open/nvidia-uvm"
GENERATED = "src/nvidia/generated"
RESOURCE_LIST = "src/nvidia/src/kernel/rmapi/resource_list.h"

# Directories and files read from a release (git archive pathspecs).
SOURCE_PATHS = [SDK, UNIX_INC, UNIX_SRC + "/escape.c", UNIX_SRC + "/osapi.c", KOPEN_INC,
                "kernel-open/nvidia/nv.c", UVM_DIR, GENERATED + "/g_allclasses.h",
                ":(glob)" + GENERATED + "/g_*_nvoc.c", RESOURCE_LIST, rmptrs.EMBEDDED,
                rmptrs.DEPRECATED] + rmptrs.handler_files()

# Escapes whose argument type no `case` block names with sizeof(): the handler passes the buffer
# to a helper (rm_perform_version_check) or the check is outside the switch (XFER in nv.c).
# Used only when the parse finds nothing and the type exists in the release's headers.
ESCAPE_TYPE_HINTS = {
    "NV_ESC_CHECK_VERSION_STR": "nv_ioctl_rm_api_version_t",
    "NV_ESC_IOCTL_XFER_CMD": "nv_ioctl_xfer_t",
    "NV_ESC_WAIT_OPEN_COMPLETE": "nv_ioctl_wait_open_complete_t",
    "NV_ESC_QUERY_DEVICE_INTR": "nv_ioctl_query_device_intr",
}

# Parameter structures whose fields the decoders read, besides every escape and UVM structure:
# the ones the real captures in tests/data/captures use most (GPU info, class lists, channel and memory
# allocation, work-submit tokens, engine ids). Missing ones (older releases) are skipped.
EXTRA_LAYOUTS = [
    # NV01_ROOT (0000): client, system and GPU-id queries
    "NV0000_CTRL_CLIENT_GET_ADDR_SPACE_TYPE_PARAMS", "NV0000_CTRL_GPU_GET_ATTACHED_IDS_PARAMS",
    "NV0000_CTRL_GPU_GET_ID_INFO_PARAMS", "NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS",
    "NV0000_CTRL_GPU_GET_PROBED_IDS_PARAMS", "NV0000_CTRL_GPU_ATTACH_IDS_PARAMS",
    "NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_PARAMS", "NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS",
    "NV0000_CTRL_OS_UNIX_EXPORT_OBJECT_TO_FD_PARAMS", "NV0000_CTRL_OS_UNIX_IMPORT_OBJECT_FROM_FD_PARAMS",
    "NV0000_CTRL_CLIENT_SET_INHERITED_SHARE_POLICY_PARAMS",
    # the GPU's identity (UUID, PCI location) that ab renames (src/ab/identity.cpp)
    "NV0000_CTRL_GPU_GET_UUID_INFO_PARAMS", "NV0000_CTRL_GPU_GET_UUID_FROM_GPU_ID_PARAMS",
    "NV0000_CTRL_GPU_GET_PCI_INFO_PARAMS",
    # NV01_DEVICE_0 (0080)
    "NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS", "NV0080_CTRL_GPU_GET_NUM_SUBDEVICES_PARAMS",
    "NV0080_CTRL_GPU_GET_VIRTUALIZATION_MODE_PARAMS", "NV0080_CTRL_FIFO_GET_CHANNELLIST_PARAMS",
    # NV20_SUBDEVICE_0 (2080)
    "NV2080_CTRL_GPU_GET_INFO_V2_PARAMS", "NV2080_CTRL_GPU_GET_GID_INFO_PARAMS",
    "NV2080_CTRL_GPU_GET_ENGINES_V2_PARAMS", "NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS",
    "NV2080_CTRL_GPU_QUERY_ECC_STATUS_PARAMS", "NV2080_CTRL_FB_GET_INFO_V2_PARAMS",
    "NV2080_CTRL_BUS_GET_INFO_V2_PARAMS", "NV2080_CTRL_BUS_GET_PCI_INFO_PARAMS",
    "NV2080_CTRL_MC_GET_ARCH_INFO_PARAMS", "NV2080_CTRL_GR_GET_INFO_PARAMS",
    "NV2080_CTRL_GR_GET_TPC_MASK_PARAMS", "NV2080_CTRL_GR_GET_CTX_BUFFER_SIZE_PARAMS",
    "NV2080_CTRL_GR_GET_GPC_MASK_PARAMS", "NV2080_CTRL_PERF_BOOST_PARAMS",
    "NV2080_CTRL_GR_GET_GLOBAL_SM_ORDER_PARAMS", "NV2080_CTRL_BUS_GET_PCI_BAR_INFO_PARAMS",
    "NV2080_CTRL_GPU_GET_OEM_BOARD_INFO_PARAMS",
    # channels, channel groups, peer-to-peer
    "NV906F_CTRL_GET_CLASS_ENGINEID_PARAMS", "NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS",
    "NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS", "NVA06C_CTRL_TIMESLICE_PARAMS", "NVA06C_CTRL_PREEMPT_PARAMS",
    "NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS", "NV503C_CTRL_REGISTER_VA_SPACE_PARAMS",
    "NV503C_CTRL_REGISTER_VIDMEM_PARAMS", "NV503C_CTRL_UNREGISTER_VIDMEM_PARAMS",
    # RM alloc parameters of the classes a CUDA context allocates
    "NV_CHANNEL_ALLOC_PARAMS", "NV_MEMORY_ALLOCATION_PARAMS", "NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS",
    "NV0080_ALLOC_PARAMETERS", "NV2080_ALLOC_PARAMETERS", "NV0005_ALLOC_PARAMETERS",
    "NV_VASPACE_ALLOCATION_PARAMETERS", "NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS",
    "NV_CTXSHARE_ALLOCATION_PARAMETERS", "NV_GR_ALLOCATION_PARAMETERS",
    "NVB0B5_ALLOCATION_PARAMETERS", "NV_OS_DESC_MEMORY_ALLOCATION_PARAMS",
    "NV_CONFIDENTIAL_COMPUTE_ALLOC_PARAMS", "NV503C_ALLOC_PARAMETERS", "NV83DE_ALLOC_PARAMETERS",
    "NV00DE_ALLOC_PARAMETERS", "NV_HOPPER_USERMODE_A_PARAMS",
]


class Tree:
    """Files of one release under `root`."""

    def __init__(self, root):
        self.root = root

    def path(self, rel):
        return os.path.join(self.root, rel)

    def read(self, rel):
        with open(self.path(rel), encoding="utf-8", errors="replace") as f:
            return f.read()

    def exists(self, rel):
        return os.path.exists(self.path(rel))

    def files(self, rel_dir, pattern):
        out = []
        base = self.path(rel_dir)
        for dirpath, _, names in os.walk(base):
            for n in names:
                if re.fullmatch(pattern, n):
                    out.append(os.path.relpath(os.path.join(dirpath, n), self.root))
        return sorted(out)


def extract_release(git_dir, rev, dest):
    """Unpacks the files of SOURCE_PATHS at `rev` into dest; returns the full commit id."""
    commit = subprocess.run(["git", "--git-dir", git_dir, "rev-parse", rev + "^{commit}"],
                            capture_output=True, text=True, check=True).stdout.strip()
    archive = subprocess.Popen(["git", "--git-dir", git_dir, "archive", commit, "--"] +
                               SOURCE_PATHS, stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", dest], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise SystemExit("gen_rm_tables: git archive %s failed" % rev)
    return commit


def _is_type(t, known_types):
    t = t.rstrip("[]")
    return t in known_types or t in rmparse.BASIC_TYPES


def _name_without_define(cid, nvoc_entry, doc_names):
    """(name, handler) of an NVOC method id no header define names: the command named by the
    documentation comment of its parameter structure (a header's name), else the name NVIDIA's
    convention gives its handler (rmparse.derive_ctrl_name; flagged as derived by the caller),
    else the handler, else ctrl_<id>."""
    params, _, handler = nvoc_entry
    name = doc_names.get(params) if params else None
    if name and not name.startswith("NV%04X_" % (cid >> 16)):
        name = None
    return (name or rmparse.derive_ctrl_name(cid, handler) or handler or "ctrl_%08x" % cid,
            handler)


def collect(tree, log):
    """Parses the release: everything except sizes. Returns a dict of lists."""
    # Status codes.
    status = rmparse.parse_status_codes(tree.read(KOPEN_INC + "/nvstatuscodes.h"))

    # Escapes: frontend numbers (NV_IOCTL_BASE + n) and RM escapes (nv_escape.h).
    env = {}
    escapes = {}
    for rel, group in ((KOPEN_INC + "/nv-ioctl-numbers.h", "frontend"),
                       (KOPEN_INC + "/nv-ioctl-numa.h", "frontend"),
                       (UNIX_INC + "/nv_escape.h", "rm")):
        if not tree.exists(rel):
            continue
        found, env = rmparse.parse_escapes(tree.read(rel), env)
        for nr, name in found:
            escapes.setdefault(name, {"nr": nr, "name": name, "group": group, "types": []})
    # Types the headers define (to keep the probe to real names).
    header_texts = []
    for d in (SDK, UNIX_INC, KOPEN_INC, UVM_DIR):
        for rel in tree.files(d, r".*\.h"):
            header_texts.append(tree.read(rel))
    known_types = set()
    for t in header_texts:
        known_types |= rmparse.defined_types(t)
    for rel in ("kernel-open/nvidia/nv.c", UNIX_SRC + "/escape.c", UNIX_SRC + "/osapi.c"):
        if tree.exists(rel):
            for name, types in rmparse.parse_escape_structs(tree.read(rel)).items():
                if name in escapes:
                    for t in types:
                        if t not in escapes[name]["types"] and _is_type(t, known_types):
                            escapes[name]["types"].append(t)

    for e in escapes.values():
        hint = ESCAPE_TYPE_HINTS.get(e["name"])
        if not e["types"] and hint in known_types:
            e["types"].append(hint)

    # Control commands.
    finn, plain_names, doc_names = {}, {}, {}
    for rel in tree.files(SDK + "/ctrl", r".*\.h"):
        text = tree.read(rel)
        for params, name in rmparse.parse_ctrl_doc_names(text).items():
            doc_names.setdefault(params, name)
        commands, plain = rmparse.parse_ctrl_header(text)
        for value, name, msg in commands:
            finn.setdefault(value, []).append((name, msg))
        for value, name in plain:
            plain_names.setdefault(value, []).append(name)
    nvoc = {}
    for rel in tree.files(GENERATED, r"g_.*_nvoc\.c"):
        for mid, params, owner, func in rmparse.parse_nvoc_methods(tree.read(rel)):
            nvoc.setdefault(mid, (params, owner, func))
    categories = {}
    for rel in tree.files(SDK + "/ctrl", r"ctrl[0-9a-f]{4}base\.h"):
        class_id = int(re.search(r"ctrl([0-9a-f]{4})base", rel).group(1), 16)
        for iid, name in rmparse.parse_ctrl_categories(tree.read(rel), class_id):
            categories.setdefault(iid, name)
    if tree.exists(SDK + "/g_finn_rm_api.h"):
        for iid, name in rmparse.parse_finn_interfaces(tree.read(SDK + "/g_finn_rm_api.h")):
            categories.setdefault(iid, name)
    ctrl = []
    for cid in sorted(set(finn) | set(nvoc)):
        flags, handler = 0, None
        params = None
        if cid in nvoc:
            flags |= rmemit.CTRL_NVOC
            params = nvoc[cid][0]
        names = finn.get(cid, [])
        if names:
            flags |= rmemit.CTRL_HEADER
            # Prefer the define whose FINN message id names the structure NVOC dispatches with.
            best = next((n for n in names if params and n[1] == params), None)
            if best is None and params is None:  # then one that names its parameter structure
                best = next((n for n in names if n[1] and n[1] in known_types), None)
            if best is None:
                best = next((n for n in names if "_CTRL_CMD_" in n[0]), names[0])
            name = best[0]
            if params is None and best[1] and best[1] in known_types:
                params = best[1]
        elif cid in plain_names:
            name = sorted(plain_names[cid])[0]
            flags |= rmemit.CTRL_HEADER
        else:
            name, handler = _name_without_define(cid, nvoc[cid], doc_names)
            flags |= rmemit.CTRL_NAME_FROM_NVOC
            if name != doc_names.get(params):
                flags |= rmemit.CTRL_NAME_DERIVED
        ctrl.append({"id": cid, "name": name, "params": params, "flags": flags,
                     "handler": handler if flags & rmemit.CTRL_NAME_FROM_NVOC else None})

    # Classes: g_allclasses.h (ids, primary names and aliases) + resource_list.h (alloc params).
    class_ids = {}
    classes = {}
    for cid, name, alias in rmparse.parse_allclasses(tree.read(GENERATED + "/g_allclasses.h")):
        class_ids[name] = cid
        if not alias and cid not in classes:
            classes[cid] = {"id": cid, "name": name, "internal": None, "params": None,
                            "required": False, "rm": True}
    header_classes = {}
    for rel in tree.files(SDK + "/class", r"cl.*\.h"):
        text = tree.read(rel)
        for name, cid in rmparse.parse_class_header_defines(text).items():
            class_ids.setdefault(name, cid)
        m = re.fullmatch(r"cl([0-9a-f]{4})\.h", os.path.basename(rel))
        if m:
            name = rmparse.parse_class_header_class(text, int(m.group(1), 16))
            if name:
                header_classes.setdefault(int(m.group(1), 16), name)
    for ext, internal, params, required in rmparse.parse_resource_list(tree.read(RESOURCE_LIST)):
        cid = class_ids.get(ext)
        if cid is None:
            log("class %s of resource_list.h has no id; skipped" % ext)
            continue
        c = classes.setdefault(cid, {"id": cid, "name": ext, "internal": None, "params": None,
                                     "required": False, "rm": True})
        if c["internal"] is None:
            c["internal"] = internal
            c["params"] = params
            c["required"] = required

    # Classes that only a class header names (engine classes RM does not allocate in this
    # release, UVM's fault-buffer class, …): named, marked as not in RM's class list.
    for cid, name in header_classes.items():
        classes.setdefault(cid, {"id": cid, "name": name, "internal": None, "params": None,
                                 "required": False, "rm": False})

    # Pointer members RM follows (embedded-pointer copies), bound to commands and classes.
    control_ids = {}
    for cid, names in finn.items():
        for name, _ in names:
            control_ids.setdefault(name, cid)
    for cid, names in plain_names.items():
        for name in names:
            control_ids.setdefault(name, cid)
    defined = set()
    for t in header_texts:
        defined |= {name for name, _ in rmparse._defines(t)}
    parsed, skipped = rmrules.parse_release(tree, defined)
    for line in skipped:
        log("pointer rules: " + line)
    not_copied_reasons = rmrules.not_copied_reasons(tree, defined)
    pointer_rules = rmrules.bind(parsed, ctrl, list(classes.values()), control_ids, log)
    by_id = {c["id"]: c for c in ctrl}
    for r in pointer_rules:  # RM's copy code names the structure a header define does not
        c = by_id.get(r["key"]) if r["kind"] == rmrules.KIND_CONTROL else None
        if c is not None and c["params"] is None and r["struct"] in known_types:
            c["params"] = r["struct"]
            log("control %s: parameters %s, from %s" % (c["name"], r["struct"], r["source"]))

    # UVM ioctls.
    uvm = []
    for rel in (UVM_DIR + "/uvm_ioctl.h", UVM_DIR + "/uvm_linux_ioctl.h"):
        for nr, name in rmparse.parse_uvm_ioctls(tree.read(rel)):
            params = name + "_PARAMS"
            uvm.append({"nr": nr, "name": name,
                        "params": params if params in known_types else None})

    return {"status": status, "escapes": sorted(escapes.values(), key=lambda e: e["nr"]),
            "ctrl": ctrl, "categories": sorted(categories.items()), "classes": sorted(classes.values(), key=lambda c: c["id"]),
            "uvm": sorted(uvm, key=lambda u: u["nr"]), "known_types": known_types,
            "header_texts": header_texts, "pointer_rules": pointer_rules,
            "not_copied_reasons": not_copied_reasons,
            "bodies": StructBodies(header_texts)}


def pointer_inventory(tables):
    """({structure: [pointer member paths]}, {(structure, path): C type}) of every control and
    allocation parameter structure and every structure a pointer rule reads (those without
    pointer members left out)."""
    names = {c["params"] for c in tables["ctrl"] if c["params"]}
    names |= {c["params"] for c in tables["classes"] if c["params"]}
    names |= {r["struct"] for r in tables["pointer_rules"]}
    out, types = {}, {}
    for n in sorted(names):
        members = rmptrs.pointer_members(n, tables["bodies"].members_of, with_types=True)
        if members:
            out[n] = [p for p, _ in members]
            types.update({(n, p): t for p, t in members})
    return out, types


class StructBodies:
    """The bodies of the structures the release's headers define, found on demand."""

    def __init__(self, texts):
        self.texts = texts
        self.bodies = {}

    def body_of(self, name, depth=0):
        if name not in self.bodies:
            self.bodies[name] = None
            for t in self.texts:
                if name not in t:
                    continue
                b = rmparse.find_struct_body(t, name)
                if b is None and depth < 3:  # `typedef OTHER_STRUCT NAME;` shares OTHER's body
                    alias = re.search(r"typedef\s+(?:struct\s+)?(\w+)\s+" + re.escape(name) +
                                      r"\s*;", t)
                    if alias:
                        b = self.body_of(alias.group(1), depth + 1)
                if b is not None:
                    self.bodies[name] = b
                    break
        return self.bodies[name]

    def members_of(self, name):
        """[(member, type, is_array, inline body)]; a struct/union declared in place is looked
        into under the name "{inline body}"."""
        if name.startswith("{"):
            return rmparse.parse_members(name[1:-1], with_bodies=True)
        body = self.body_of(name)
        if body is None:
            return None
        return [(m, "{%s}" % b if b is not None else t, a, b)
                for m, t, a, b in rmparse.parse_members(body, with_bodies=True)]


def layout_requests(tables):
    """Structures whose members are located: every escape and UVM structure, EXTRA_LAYOUTS, the
    allocation parameters of every class, the structures pointer rules read and their element
    types, and the structure types of their members (two levels)."""
    wanted = []
    for e in tables["escapes"]:
        wanted += [t.rstrip("[]") for t in e["types"]]
    wanted += [u["params"] for u in tables["uvm"] if u["params"]]
    wanted += EXTRA_LAYOUTS
    wanted += sorted({c["params"] for c in tables["classes"] if c["params"]})
    for r in tables["pointer_rules"]:
        wanted.append(r["struct"])
        if r["elem"][0] == "sizeof":
            wanted.append(r["elem"][1])
    wanted += sorted(tables["pointer_inventory"])
    bodies = tables["bodies"]
    body_of = bodies.body_of

    out, seen = [], set()
    queue = [(n, 0) for n in wanted
             if n in tables["known_types"] and n not in rmparse.BASIC_TYPES]
    while queue:
        name, depth = queue.pop(0)
        if name in seen:
            continue
        seen.add(name)
        body = body_of(name)
        if body is None:
            continue
        members = rmparse.parse_members(body)
        out.append((name, members))
        if depth < 2:
            for _, mtype, _ in members:
                base = mtype.rstrip("*")
                if (base not in seen and base in tables["known_types"] and
                        base not in rmparse.BASIC_TYPES and not mtype.endswith("*")):
                    queue.append((base, depth + 1))
    return out


def measure(tree, tables, log):
    """Compiles the release's headers once and returns (sizes, fields)."""
    includes = ["nvtypes.h", "nvos.h"]
    for sub in ("ctrl", "class", "alloc"):
        includes += [os.path.relpath(p, SDK) for p in tree.files(SDK + "/" + sub, r".*\.h")]
    for h in ("nv-ioctl.h", "nv-ioctl-numa.h", "nv-unix-nvos-params-wrappers.h",
              "nv-ioctl-lockless-diag.h"):
        if tree.exists(UNIX_INC + "/" + h) or tree.exists(KOPEN_INC + "/" + h):
            includes.append(h)
    includes += ["uvm_linux_ioctl.h", "uvm_ioctl.h"]
    include_dirs = [tree.path(SDK), tree.path(SDK + "/ctrl"), tree.path(SDK + "/class"),
                    tree.path(UNIX_INC), tree.path(UVM_DIR), tree.path(KOPEN_INC)]
    types = set()
    for c in tables["ctrl"]:
        if c["params"]:
            types.add(c["params"])
    for c in tables["classes"]:
        if c["params"]:
            types.add(c["params"])
    for e in tables["escapes"]:
        types |= {t.rstrip("[]") for t in e["types"]}
    for u in tables["uvm"]:
        if u["params"]:
            types.add(u["params"])
    layouts = layout_requests(tables)
    fields = []
    for name, members in layouts:
        types.add(name)
        for m, _, is_array in members:
            fields.append((name, m, is_array))
    for u in tables["uvm"]:
        if u["params"]:
            fields.append((u["params"], "rmStatus", False))
    rule_types, rule_fields, rule_values = rmrules.probe_requests(tables["pointer_rules"])
    types |= rule_types
    fields += sorted(rule_fields)
    sizes, offsets, dropped, values = rmprobe.probe(includes, include_dirs, sorted(types),
                                                    sorted(set(fields)),
                                                    values=sorted(rule_values))
    for d in dropped:
        log("probe: dropped " + d)
    return sizes, offsets, layouts, values


def build_tables(tree, version, commit, log):
    tables = collect(tree, log)
    tables["pointer_inventory"], pointer_types = pointer_inventory(tables)
    sizes, offsets, layouts, values = measure(tree, tables, log)
    tables["sizes"] = sizes
    tables["offsets"] = offsets
    tables["layouts"] = layouts
    tables["pointers"] = rmrules.resolve(tables["pointer_rules"], sizes, offsets, values, log)
    tables["pointer_members"] = rmrules.inventory(
        {n: p for n, p in tables["pointer_inventory"].items() if n in sizes}, tables["pointers"],
        pointer_types, tables["not_copied_reasons"])
    tables["version"] = version
    tables["commit"] = commit
    return tables


def branch_id(version):
    return "r" + version.split(".")[0]


def generate(args, out_root, log):
    releases = []
    if args.tree:
        releases.append((args.tree, args.version, args.commit or "unknown", None))
    tmp_dirs = []
    try:
        for rev in args.rev or []:
            d = tempfile.mkdtemp(prefix="rmtables.")
            tmp_dirs.append(d)
            commit = extract_release(args.git_dir, rev, d)
            releases.append((d, rev, commit, None))
        written = []
        for root, version, commit, _ in releases:
            log("release %s (%s)" % (version, commit))
            tables = build_tables(Tree(root), version, commit, log)
            bid = branch_id(version)
            counts = rmemit.emit_branch(os.path.join(out_root, bid), bid, tables)
            log("  " + ", ".join("%s %d" % kv for kv in counts.items()))
            written.append((bid, version, commit))
            if args.dump_json:
                dump = {k: tables[k] for k in ("status", "escapes", "ctrl", "categories", "classes",
                                                "uvm")}
                dump["sizes"] = tables["sizes"]
                with open(args.dump_json.replace("{branch}", bid), "w") as f:
                    json.dump(dump, f, indent=1, sort_keys=True)
        rmemit.emit_index(out_root, written)
    finally:
        for d in tmp_dirs:
            shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--git-dir", help="git directory of NVIDIA/open-gpu-kernel-modules")
    ap.add_argument("--rev", action="append", help="release tag or commit (repeatable)")
    ap.add_argument("--tree", help="an unpacked source tree of one release instead of --git-dir")
    ap.add_argument("--version", help="the release version of --tree, e.g. 580.142")
    ap.add_argument("--commit", help="the commit of --tree, for the banner")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "src",
                                                  "rm", "generated"))
    ap.add_argument("--check", action="store_true",
                    help="regenerate into a temporary directory and compare with --out")
    ap.add_argument("--dump-json", help="write the intermediate lists (FILE may hold {branch})")
    ap.add_argument("--index-only", action="store_true",
                    help="only rewrite the files made from the branch directories already in --out "
                         "(branches.inc, uvm_sizes.h): needs no NVIDIA sources")
    ap.add_argument("--pointer-doc", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                          "docs", "rm-pointers.md"),
                    help="where the list of pointer members goes (\"\": not written)")
    ap.add_argument("-q", "--quiet", action="store_true")
    args = ap.parse_args()
    if args.index_only:
        rmemit.emit_index(os.path.abspath(args.out), None)
        if args.pointer_doc:
            rmemit.emit_pointer_doc(os.path.abspath(args.out), args.pointer_doc)
        return 0
    if not args.tree and not (args.git_dir and args.rev):
        ap.error("give --git-dir with --rev, or --tree with --version")
    if args.tree and not args.version:
        ap.error("--tree needs --version")

    def log(msg):
        if not args.quiet:
            print("gen_rm_tables: " + msg, file=sys.stderr)

    out = os.path.abspath(args.out)
    if not args.check:
        os.makedirs(out, exist_ok=True)
        generate(args, out, log)
        if args.pointer_doc:
            rmemit.emit_pointer_doc(out, args.pointer_doc)
        return 0
    # Regenerate the named releases over a copy of the committed tree, then compare.
    tmp = tempfile.mkdtemp(prefix="rmtables-check.")
    try:
        fresh = os.path.join(tmp, "generated")
        shutil.copytree(out, fresh)
        generate(args, fresh, log)
        diff = subprocess.run(["diff", "-r", "-u", out, fresh], capture_output=True, text=True)
        if diff.returncode != 0:
            print(diff.stdout[-20000:])
            print("gen_rm_tables: committed tables differ from a fresh generation", file=sys.stderr)
            return 1
        log("committed tables match a fresh generation")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
