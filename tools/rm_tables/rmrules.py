"""Pointer-member rules of one release: the copies rmptrs.py finds in RM's sources, tied to the
control commands and classes they serve, measured by the compiler probe (rmprobe.py), and the
inventory of every pointer member of the control and allocation parameter structures with what
RM does with it.

A resolved rule (one row of rNNN/pointers.inc) holds numbers only: where the pointer, its count
members and its condition sit in the parameter structure, the bytes per counted unit, and, for a
member of every element of an array, the array's offset, stride, capacity and count member. The
condition holds when (member & cond_mask) == cond_value; cond_mask is all ones unless the rule
names a bit field (rmptrs.py, "cond").
"""

import rmptrs

KIND_CONTROL, KIND_ALLOC = 0, 1
NO_MEMBER = 0xFFFFFFFF
FLAG_BOUNDED = 1  # RM copies it, the sources give no extent: read with a bound

STATUS_FOLLOWED, STATUS_BOUNDED, STATUS_NOT_COPIED = 0, 1, 2
ALL_BITS = 0xFFFFFFFF  # cond_mask of a condition on the whole member


def cond_exprs(cond):
    """(value expression, mask expression or None) the probe evaluates for a rule's condition:
    the constant, or for a bit field `hi:lo` the constant shifted to bit lo and the mask of bits
    hi..lo (the `0?F` / `1?F` idiom of nvmisc.h's DRF macros: (0?7:4) is 4, (1?7:4) is 7).
    Without spaces: the probe's output is split on them."""
    if len(cond) < 3:
        return cond[1], None
    f = cond[2]
    return ("((%s)<<(0?%s))" % (cond[1], f),
            "((0xFFFFFFFFu>>(31-(1?%s)+(0?%s)))<<(0?%s))" % (f, f, f))


def _probe_path(path):
    return path.replace("[]", "[0]")


def parse_release(tree, defined):
    """(rules, log lines) of the release's copy code (files it lacks give nothing)."""
    rules, log = [], []
    for rel, parse in ((rmptrs.EMBEDDED, rmptrs.parse_embedded_param_copy),
                       (rmptrs.DEPRECATED, rmptrs.parse_deprecated_controls)):
        if tree.exists(rel):
            found, skipped = parse(tree.read(rel), defined)
            rules += found
            log += ["%s: %s" % (rel, s) for s in skipped]
    found, skipped = rmptrs.handler_copies(lambda rel: tree.read(rel) if tree.exists(rel)
                                           else None)
    return rules + found, log + skipped


def not_copied_reasons(tree, defined):
    """{(struct, member): reason} the release's sources give for members RM does not copy: a
    copy of embedded_param_copy.c the build compiles out, or a NOT_COPIED_NOTES entry."""
    out = {}
    if tree.exists(rmptrs.EMBEDDED):
        for key, guard in rmptrs.compiled_out_copies(tree.read(rmptrs.EMBEDDED),
                                                     defined).items():
            out[key] = ("its copy in embedded_param_copy.c is compiled out (#ifdef %s)" % guard
                        if guard else "its copy in embedded_param_copy.c is compiled out")
    out.update(rmptrs.not_copied_notes(lambda rel: tree.read(rel) if tree.exists(rel)
                                       else None))
    return out


def bind(rules, ctrl, classes, control_ids, log):
    """Rules with (kind, key): a rule of a command to that command's id (control_ids: define name
    -> id); a handler's rule to every command whose parameters, and every class whose allocation
    parameters, are its structure. One rule per (kind, key, pointer)."""
    out, seen = [], set()

    def add(kind, key, r):
        k = (kind, key, r["ptr"])
        if k not in seen:
            seen.add(k)
            out.append(dict(r, kind=kind, key=key))

    for r in rules:
        if r["cmd"] is not None:
            cid = control_ids.get(r["cmd"])
            if cid is None:
                log("pointer rule of %s: no such control command; skipped" % r["cmd"])
                continue
            add(KIND_CONTROL, cid, r)
            continue
        keys = [(KIND_CONTROL, c["id"]) for c in ctrl if c["params"] == r["struct"]]
        keys += [(KIND_ALLOC, c["id"]) for c in classes if c["params"] == r["struct"]]
        if not keys:
            log("pointer rule %s.%s: no command or class takes the structure" % (r["struct"],
                                                                             r["ptr"]))
        for kind, key in keys:
            add(kind, key, r)
    return out


def probe_requests(rules):
    """(types, fields, values) the probe must measure for the rules."""
    types, fields, values = set(), set(), set()
    for r in rules:
        types.add(r["struct"])
        fields.add((r["struct"], _probe_path(r["ptr"]), False))
        base = r["array"]["path"] + "[0]." if r["array"] else ""
        for c in r["count"]:
            fields.add((r["struct"], base + c, False))
        if r["array"]:
            fields.add((r["struct"], r["array"]["path"], True))
            fields.add((r["struct"], r["array"]["count"], False))
        if r["cond"]:
            fields.add((r["struct"], r["cond"][0], False))
            values |= {e for e in cond_exprs(r["cond"]) if e}
        if r["elem"][0] == "sizeof":
            types.add(r["elem"][1])
        elif r["elem"][0] == "member":
            types.add(r["elem"][1])
            fields.add((r["elem"][1], r["elem"][2], False))
    return types, fields, values


def resolve(rules, sizes, offsets, values, log):
    """The rows of pointers.inc: each rule with its numbers, sorted by (kind, key, pointer
    offset); a rule the probe could not measure is dropped and logged."""
    rows = []
    for r in rules:
        s = r["struct"]
        where = "%s.%s" % (s, r["ptr"])
        try:
            ptr = offsets[(s, _probe_path(r["ptr"]))]
            row = {"kind": r["kind"], "key": r["key"], "struct": s, "ptr": r["ptr"],
                   "role": "params." + r["ptr"], "params_size": sizes[s], "source": r["source"],
                   "array_off": NO_MEMBER, "array_stride": 0, "array_max": 0,
                   "array_count_off": NO_MEMBER, "array_count_size": 0, "cond_off": NO_MEMBER,
                   "cond_size": 0, "cond_value": 0, "cond_mask": ALL_BITS, "flags": 0,
                   "elem_type": ""}
            base = 0
            if r["array"]:
                a = offsets[(s, r["array"]["path"])]
                ac = offsets[(s, r["array"]["count"])]
                row.update(array_off=a[0], array_stride=a[2], array_max=a[1] // max(a[2], 1),
                           array_count_off=ac[0], array_count_size=ac[1])
                base = a[0]
                prefix = r["array"]["path"] + "[0]."
            else:
                prefix = ""
            row["ptr_off"] = ptr[0] - base
            counts = [offsets[(s, prefix + c)] for c in r["count"]]
            if len(counts) > 2 or len({c[1] for c in counts}) > 1:
                raise KeyError("count members")
            row["count"] = [c for c in r["count"]]
            row["count_off"] = [c[0] - base for c in counts] + [NO_MEMBER] * (2 - len(counts))
            row["count_size"] = counts[0][1] if counts else 0
            e = r["elem"]
            if e[0] == "sizeof":
                row["elem_size"] = sizes[e[1]]
                row["elem_type"] = e[1]
            elif e[0] == "member":
                row["elem_size"] = offsets[(e[1], e[2])][1]
            elif e[0] == "num":
                row["elem_size"] = e[1]
            else:  # no derivable extent
                row["elem_size"] = 0
                row["flags"] |= FLAG_BOUNDED
            if r["cond"]:
                c = offsets[(s, r["cond"][0])]
                value, mask = cond_exprs(r["cond"])
                row.update(cond_off=c[0], cond_size=c[1], cond_value=values[value],
                           cond_mask=values[mask] if mask else ALL_BITS)
                if (row["cond_value"] & ~row["cond_mask"] or c[1] > 4 or
                        not 0 <= row["cond_mask"] <= ALL_BITS):
                    raise KeyError("condition %s: value 0x%x, mask 0x%x, %d-byte member" % (
                        r["cond"], row["cond_value"], row["cond_mask"], c[1]))
        except KeyError as missing:
            log("pointer rule %s (%s): not measured (%s); skipped" % (where, r["source"],
                                                                      missing))
            continue
        rows.append(row)
    rows.sort(key=lambda x: (x["kind"], x["key"], x["array_off"] if x["array_off"] != NO_MEMBER
                             else x["ptr_off"], x["ptr_off"], x["ptr"]))
    return rows


NO_COPY_SITE = "no copy in the sources read (embedded_param_copy.c, the converters, handlers)"


def inventory(paths, rows, types=None, reasons=None):
    """[(struct, member path, status, reason)] of the pointer members `paths` ({structure:
    [paths]}) lists: followed (a rule reads it), bounded (RM copies it, no extent), not copied;
    a not-copied member's reason is what `reasons` ({(struct, path): text}) says, else, for a
    native pointer (types {(struct, path): C type} `T *`), that it is a kernel address, else that
    the sources read have no copy of it. Followed and bounded members have reason ""."""
    ruled = {}
    for r in rows:
        ruled[(r["struct"], r["ptr"])] = (STATUS_BOUNDED if r["flags"] & FLAG_BOUNDED
                                          else STATUS_FOLLOWED)
    out = []
    for s in sorted(paths):
        for path in paths[s]:
            status = ruled.get((s, path), STATUS_NOT_COPIED)
            reason = ""
            if status == STATUS_NOT_COPIED:
                t = (types or {}).get((s, path), "")
                reason = (reasons or {}).get((s, path)) or (
                    "a native pointer (`%s`), not an NvP64: a kernel address, no user copy" %
                    " ".join(t.split()) if t.endswith("*") else NO_COPY_SITE)
            out.append((s, path, status, reason))
    return out
