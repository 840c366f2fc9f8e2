"""Where RM follows the pointers inside control and allocation parameters: text parsers for the
copy code of NVIDIA's open-gpu-kernel-modules (no compiler, no disk: test_rmparse.py feeds them
snippets).

RM copies the parameter structure of an RM control (NVOS54 `params`, `paramsSize` bytes) or an RM
alloc (`pAllocParms`, sized by the class) into the kernel, and then, for a few commands, the
buffers that pointer members of that structure point to ("embedded pointers"). Three places do
it, and they are the authority on how long each buffer is:

  src/nvidia/src/kernel/rmapi/embedded_param_copy.c    embeddedParamCopyIn(): one
      `case <command>:` per control, each RMAPI_PARAM_COPY_INIT(copy, user pointer, kernel
      pointer, count, element size); a helper switch on a member selects the union arm
      (_i2cTransactionCopyIn, on transType)
  src/nvidia/interface/deprecated/rmapi_deprecated_control.c   converters of old controls to
      their flat _V2 form: CONVERT_TO_V2[_EX](newCmd, oldType, newType, oldList, newList,
      listSizeField, listSizeIsCount, elemType, ...), and hand-written ones that copy members
      with rmapiParamsCopyOut / RmCopyUserForDeprecatedApi
  control handlers and class constructors that copy a member themselves
      (portMemExCopyToUser/FromUser, rmapiParamsCopyIn): listed in HANDLER_COPIES with the file
      and the text that must be in it, so that a release that drops the copy drops the rule.

A rule is a dict:
  {"cmd": control define name | None, "struct": parameter type, "ptr": member path ("grInfoList",
   "transData.i2cBlockData.pMessage"; "opsBuffer[].pCpuVA" for a member of every element of an
   array), "count": [member paths] (0, 1 or 2 factors; in an array rule relative to the element),
   "elem": ("sizeof", TYPE) | ("num", N) | ("member", TYPE, MEMBER) (bytes per counted unit, or
   the whole extent when "count" is empty), "array": None | {"path": "opsBuffer", "count":
   "count"}, "cond": None | (member path, constant name) | (member path, constant name, field
   define), "source": file}
The condition holds when the member equals the constant, or, with a field define (a DRF range
`hi:lo` such as NVOS30_FLAGS_CHANNEL 7:4), when the member's bits hi..lo equal the constant
(`DRF_VAL(...) == constant`); the compiler evaluates the mask and the shifted value.
"""

import re

import rmparse

EMBEDDED = "src/nvidia/src/kernel/rmapi/embedded_param_copy.c"
DEPRECATED = "src/nvidia/interface/deprecated/rmapi_deprecated_control.c"

# Copies a control handler or class constructor makes itself, by parameter structure. `needs` is
# a regular expression the cited file must match (the copy call naming the member); without it
# the rule is not used for that release. `also`: further (file, expression) pairs that must match
# too (the handler that passes the member to the helper that copies it). `cond`: as in a rule.
IDLE_CHANNELS = "src/nvidia/src/kernel/gpu/fifo/kernel_idle_channels.c"
CLIENT_RESOURCE = "src/nvidia/src/kernel/rmapi/client_resource.c"


def _idle_channels(member, copy, local):
    # cliresCtrlCmdIdleChannels_IMPL passes pParams->phClients/phDevices/phChannels to
    # RmIdleChannels, which, under `case NVOS30_FLAGS_CHANNEL_LIST:` of
    # `switch (DRF_VAL(OS30, _FLAGS, _CHANNEL, flags))`, copies numChannels NvU32 handles of each
    # (RMAPI_PARAM_COPY_INIT + rmapiParamsAcquire); other values of the field copy nothing.
    return {"struct": "NV0000_CTRL_GPU_IDLE_CHANNELS_PARAMS", "ptr": member,
            "count": ["numChannels"], "elem": ("sizeof", "NvU32"),
            "cond": ("flags", "NVOS30_FLAGS_CHANNEL_LIST", "NVOS30_FLAGS_CHANNEL"),
            "file": IDLE_CHANNELS,
            "needs": (r"switch\s*\(\s*DRF_VAL\s*\(\s*OS30\s*,\s*_FLAGS\s*,\s*_CHANNEL\s*,\s*flags"
                      r"\s*\)\s*\)(?:(?!\bdefault\b).)*?case\s+NVOS30_FLAGS_CHANNEL_LIST\s*:"
                      r"(?:(?!\bcase\b|\bdefault\b).)*?RMAPI_PARAM_COPY_INIT\s*\(\s*" + copy +
                      r"\s*,\s*" + member + r"\s*,\s*" + local +
                      r"\s*,\s*numChannels\s*,\s*sizeof\s*\(\s*NvU32\s*\)\s*\)"
                      r"(?:(?!\bcase\b|\bdefault\b).)*?rmapiParamsAcquire\s*\(\s*&\s*" + copy +
                      r"\b"),
            "also": [(CLIENT_RESOURCE,
                      r"RmIdleChannels\s*\([^;]*pParams->numChannels[^;]*pParams->" + member +
                      r"\b[^;]*pParams->flags")]}


HANDLER_COPIES = [
    {"struct": "NV_MEMORY_LIST_ALLOCATION_PARAMS", "ptr": "pageNumberList",
     "count": ["pageCount"], "elem": ("sizeof", "NvU64"),
     "file": "src/nvidia/src/kernel/mem_mgr/mem_list.c",
     "needs": r"rmapiParamsCopyIn\([^;]*pAllocParams->pageNumberList[^;]*pageCount"},
    {"struct": "NV2080_CTRL_CMD_FB_GET_CLIENT_ALLOCATION_INFO_PARAMS", "ptr": "pAllocInfo",
     "count": ["allocCount"], "elem": ("sizeof", "NV2080_CTRL_CMD_FB_ALLOCATION_INFO"),
     "file": "src/nvidia/src/kernel/gpu/mem_mgr/mem_mgr_ctrl.c",
     "needs": r"portMemExCopyToUser\([^;]*pParams->pAllocInfo"},
    {"struct": "NV2080_CTRL_CMD_FB_GET_CLIENT_ALLOCATION_INFO_PARAMS", "ptr": "pClientInfo",
     "count": ["clientCount"], "elem": ("sizeof", "NV2080_CTRL_CMD_FB_CLIENT_INFO"),
     "file": "src/nvidia/src/kernel/gpu/mem_mgr/mem_mgr_ctrl.c",
     "needs": r"portMemExCopyToUser\([^;]*pParams->pClientInfo"},
    {"struct": "NV83DE_CTRL_DEBUG_ACCESS_SURFACE_PARAMETERS", "ptr": "opsBuffer[].pCpuVA",
     "count": ["size"], "elem": ("num", 1), "array": {"path": "opsBuffer", "count": "count"},
     "file": "src/nvidia/src/kernel/gpu/gr/kernel_sm_debugger_session_ctrl.c",
     "needs": r"bufPtr\s*=\s*pParams->opsBuffer\[i\]\.pCpuVA"},
    _idle_channels("phClients", "paramCopyClients", "clients"),
    _idle_channels("phDevices", "paramCopyDevices", "devices"),
    _idle_channels("phChannels", "paramCopyChannels", "channels"),
]

# Why RM copies no buffer for a pointer member, where a handler's own code says so (the reason
# pointer_members.inc and docs/rm-pointers.md give): used only where `file` matches `needs`.
NOT_COPIED_NOTES = [
    {"struct": "NV2080_CTRL_FIFO_DISABLE_CHANNELS_PARAMS", "ptr": "pRunlistPreemptEvent",
     "note": "kernel clients only: RM refuses a caller below kernel privilege that sets it",
     "file": "src/nvidia/src/kernel/gpu/fifo/kernel_fifo_ctrl.c",
     "needs": r"pRunlistPreemptEvent\s*!=\s*NULL\s*\)\s*&&\s*\(\s*pCallContext->secInfo\.privLevel"
              r"\s*<\s*RS_PRIV_LEVEL_KERNEL"},
    {"struct": "NV003E_CTRL_GET_SURFACE_PHYS_PAGES_PARAMS", "ptr": "pPages",
     "note": "RM writes the page list through it as a kernel address (osGetMemoryPages), "
             "no user copy",
     "file": "src/nvidia/src/kernel/mem_mgr/system_mem.c",
     "needs": r"osGetMemoryPages\s*\([^;]*NvP64_VALUE\s*\(\s*pParams->pPages\s*\)"},
    {"struct": "NV2080_CTRL_FB_GET_BAR1_OFFSET_PARAMS", "ptr": "cpuVirtAddress",
     "note": "an address RM looks up among the client's CPU mappings",
     "file": "src/nvidia/src/kernel/gpu/mem_mgr/mem_mgr_ctrl.c",
     "needs": r"CliFindMappingInClient\s*\([^;]*pFbMemParams->cpuVirtAddress"},
    {"struct": "NV0073_CTRL_CMD_DP_RETRIEVE_DP_RING_BUFFER_PARAMS", "ptr": "pDpRingBuffer",
     "note": "an address RM returns (the ring buffer it creates)",
     "file": "src/nvidia/src/kernel/gpu/disp/disp_common_kern_ctrl_minimal.c",
     "needs": r"pParams->pDpRingBuffer\s*=\s*\(\s*NvU8\s*\*\s*\)\s*rcdbCreateRingBuffer"},
] + [
    {"struct": "NV_EVENT_BUFFER_ALLOC_PARAMETERS", "ptr": m,
     "note": "an address RM returns (its mapping of the event buffer)",
     "file": "src/nvidia/src/kernel/rmapi/event_buffer.c",
     "needs": r"pAllocParams->" + m + r"\s*=\s*pClientMap->" + a}
    for m, a in (("bufferHeader", "headerAddr"), ("recordBuffer", "recordBuffAddr"),
                 ("vardataBuffer", "vardataBuffAddr"))]

# Hand-written converters whose copy length the code computes from the strings themselves: the
# extent of the user's buffer is what the header says the caller allocates. Used only when the
# converter copies out to that member.
CONVERTER_EXTENTS = {
    # ctrl0000system.h: "The client then allocates memory of size sizeOfStrings for
    # pVersionBuffer and pTitleBuffer"; the converter refuses a sizeOfStrings shorter than the
    # longest string and copies each string (with its NUL) out.
    ("NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_PARAMS", "pDriverVersionBuffer"): ["sizeOfStrings"],
    ("NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_PARAMS", "pVersionBuffer"): ["sizeOfStrings"],
    ("NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_PARAMS", "pTitleBuffer"): ["sizeOfStrings"],
}


def apply_ifdefs(text, defined):
    """Drops the lines of `#ifdef X` / `#ifndef X` / `#if defined(X)` regions that are compiled
    out when exactly the names in `defined` are defined (other `#if` conditions keep both arms)."""
    out, stack = [], []  # stack of (active, decided)
    for line in text.split("\n"):
        s = line.strip()
        m = re.match(r"#\s*(ifdef|ifndef)\s+(\w+)", s) or re.match(
            r"#\s*if\s+(!?)\s*defined\s*\(?\s*(\w+)\s*\)?\s*$", s)
        if m:
            if m.group(1) in ("ifdef", ""):
                on = m.group(2) in defined
            elif m.group(1) == "ifndef" or m.group(1) == "!":
                on = m.group(2) not in defined
            stack.append((on, True))
            continue
        if re.match(r"#\s*if\b", s):
            stack.append((True, False))
            continue
        if re.match(r"#\s*(else|elif)\b", s) and stack:
            on, decided = stack[-1]
            stack[-1] = ((not on) if decided else True, decided)
            continue
        if re.match(r"#\s*endif\b", s) and stack:
            stack.pop()
            continue
        out.append(line if all(on for on, _ in stack) else "")
    return "\n".join(out)


def function_body(text, name):
    """The text between the braces of the definition of C function `name`, or None."""
    for m in re.finditer(r"\b" + re.escape(name) + r"\s*\)?\s*\(", text):
        i, depth = m.end(), 1
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        j = i
        while j < len(text) and text[j] in " \t\r\n":
            j += 1
        if j >= len(text) or text[j] != "{":
            continue  # a declaration or a call
        start, depth, k = j + 1, 1, j + 1
        while k < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[k], 0)
            k += 1
        return text[start:k - 1]
    return None


def split_args(s):
    """Top-level comma split of a macro or call argument list (without its parentheses)."""
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def calls(text, name, where=False):
    """[argument list] of every `name(...)` in text ([(argument list, offset)] with `where`)."""
    out = []
    for m in re.finditer(r"\b" + re.escape(name) + r"\s*\(", text):
        i, depth = m.end(), 1
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        args = split_args(text[m.end():i - 1])
        out.append((args, m.start()) if where else args)
    return out


def split_top(s, sep):
    """`s` split at the `sep` characters outside parentheses."""
    out, depth, cur = [], 0, ""
    for ch in s:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == sep and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return out + [cur]


_MEMBER_REF = re.compile(r"^\(?\s*(?:\(\s*\(\s*(\w+)\s*\*\s*\)\s*(\w+)\s*\)|(\w+))\s*->\s*"
                         r"([A-Za-z_][\w.]*)\s*\)?$")


def member_ref(expr, var_types):
    """(struct type, member path) of `((TYPE*)p)->a.b` or `p->a.b` (p declared `TYPE *p`)."""
    m = _MEMBER_REF.match(" ".join(expr.split()))
    if not m:
        return None
    if m.group(1):
        return m.group(1), m.group(4)
    t = var_types.get(m.group(3))
    return (t, m.group(4)) if t else None


def pointer_decls(text):
    """{variable: type} of `TYPE *var` declarations (and casts assigned to them)."""
    return {v: t for t, v in re.findall(r"\b([A-Za-z_]\w*)\s*\*\s*([A-Za-z_]\w*)\s*[;=)]", text)}


def _elem(expr):
    e = " ".join(expr.split())
    m = re.fullmatch(r"sizeof\s*\(\s*(\w+)\s*\)", e)
    if m:
        return ("sizeof", m.group(1))
    try:
        return ("num", int(e.rstrip("uU"), 0))
    except ValueError:
        return None


def _count(expr, block, var_types):
    """Member paths whose product is the count: a member, a literal 1 (none), or a local variable
    last assigned a product of members."""
    e = " ".join(expr.split())
    if re.fullmatch(r"1[uU]?", e):
        return []
    ref = member_ref(e, var_types)
    if ref:
        return [ref[1]]
    if re.fullmatch(r"[A-Za-z_]\w*", e):
        assigned = re.findall(r"\b" + e + r"\s*=\s*([^;]+);", block)
        for a in reversed(assigned):
            factors = [member_ref(f, var_types) for f in split_top(a, "*")]
            if factors and all(factors):
                return [f[1] for f in factors]
    return None


def _copy_inits(block, var_types, source, cmd, skipped):
    rules = []
    for args, at in calls(block, "RMAPI_PARAM_COPY_INIT", where=True):
        if len(args) != 5:
            skipped.append("%s: RMAPI_PARAM_COPY_INIT with %d arguments" % (cmd, len(args)))
            continue
        ptr = member_ref(args[1], var_types)
        count = _count(args[3], block[:at], var_types)  # a local assigned before the call
        elem = _elem(args[4])
        if ptr is None or count is None or elem is None:
            skipped.append("%s: no extent from RMAPI_PARAM_COPY_INIT(%s)" % (cmd, ", ".join(args)))
            continue
        rules.append({"cmd": cmd, "struct": ptr[0], "ptr": ptr[1], "count": count, "elem": elem,
                      "array": None, "cond": None, "source": source})
    return rules


def _cases(body):
    """[(case label, block text)] of a switch body, `case A: case B:` sharing one block."""
    labels = list(re.finditer(r"\bcase\s+(\w+)\s*:", body))
    out = []
    for i, m in enumerate(labels):
        end = labels[i + 1].start() if i + 1 < len(labels) else len(body)
        out.append((m.group(1), body[m.end():end]))
    # A label with an empty block shares the next one's.
    for i in range(len(out) - 2, -1, -1):
        if not out[i][1].strip():
            out[i] = (out[i][0], out[i + 1][1])
    return out


def parse_embedded_param_copy(text, defined=()):
    """(rules, skipped) from embedded_param_copy.c: one rule per RMAPI_PARAM_COPY_INIT of each
    `case <command>:` of embeddedParamCopyIn(), the parameter type from the pointer expression;
    a case that calls a helper `if (!_helper(paramCopies, pRmCtrlParams))` takes the helper's
    switch on a member as the condition of each arm."""
    text = apply_ifdefs(rmparse.strip_comments(text), set(defined))
    body = function_body(text, "embeddedParamCopyIn")
    rules, skipped = [], []
    if body is None:
        return rules, ["embeddedParamCopyIn not found"]
    for cmd, block in _cases(body):
        if cmd == "default":
            continue
        block = block.split("break;")[0] if "RMAPI_PARAM_COPY_INIT" in block else block
        found = _copy_inits(block, pointer_decls(block), EMBEDDED, cmd, skipped)
        helper = re.search(r"if\s*\(\s*!\s*(\w+)\s*\(\s*paramCopies\s*,", block)
        if not found and helper:
            hbody = function_body(text, helper.group(1))
            if hbody is None:
                skipped.append("%s: helper %s not found" % (cmd, helper.group(1)))
                continue
            types = pointer_decls(hbody)
            sw = re.search(r"switch\s*\(\s*(\w+)\s*->\s*([\w.]+)\s*\)", hbody)
            if not sw or sw.group(1) not in types:
                skipped.append("%s: helper %s has no switch on a member" % (cmd, helper.group(1)))
                continue
            for label, arm in _cases(hbody):
                for r in _copy_inits(arm.split("break;")[0], types, EMBEDDED, cmd, skipped):
                    r["cond"] = (sw.group(2), label)
                    found.append(r)
        if not found:
            skipped.append("%s: no embedded pointer copy" % cmd)
        rules += found
    return rules, skipped


def compiled_out_copies(text, defined=()):
    """{(struct, member): guard} of the copies of embedded_param_copy.c that the build compiles
    out: an RMAPI_PARAM_COPY_INIT of a member (its extent derivable or not) that only the file
    read whole has, with the name of the last
    `#if[n]def NAME` / `#if defined(NAME)` still open before its `case` label ("" if none)."""
    def copied(t):  # {(struct, member): command} of every RMAPI_PARAM_COPY_INIT of the cases
        body = function_body(t, "embeddedParamCopyIn") or ""
        found = {}
        for cmd, block in _cases(body):
            types = pointer_decls(block)
            for args in calls(block, "RMAPI_PARAM_COPY_INIT"):
                ref = member_ref(args[1], types) if len(args) == 5 else None
                if ref:
                    found.setdefault(ref, cmd)
        return found

    plain = rmparse.strip_comments(text)
    built = copied(apply_ifdefs(plain, set(defined)))
    out = {}
    for key, cmd in copied(plain).items():
        if key in built:
            continue
        at = re.search(r"\bcase\s+" + re.escape(cmd) + r"\s*:", plain)
        guard, open_guards = "", []
        for m in re.finditer(r"^[ \t]*#\s*(ifn?def|if|endif)\b[ \t]*(.*)$",
                             plain[:at.start()] if at else "", re.M):
            if m.group(1) == "endif":
                if open_guards:
                    open_guards.pop()
            else:
                name = re.search(r"(\w+)\s*\)?\s*$", m.group(2))
                open_guards.append(name.group(1) if name else "")
        if open_guards:
            guard = open_guards[-1]
        out[key] = guard
    return out


def parse_deprecated_controls(text, defined=()):
    """(rules, skipped) from rmapi_deprecated_control.c: the commands of rmDeprecatedControlTable
    and, per converter, CONVERT_TO_V2[_EX] (list field, its size field, count or bytes, element
    type) or the members a hand-written converter copies (rmapiParamsCopyOut /
    RmCopyUserForDeprecatedApi on `pParams->member`), with the extent `sizeof(pParams2->m)` of
    the flat structure, or CONVERTER_EXTENTS."""
    text = apply_ifdefs(rmparse.strip_comments(text), set(defined))
    rules, skipped = [], []
    table = re.findall(r"\{\s*(\w+)\s*,\s*V2_CONVERTER\(\s*(\w+)\s*\)\s*(?:,[^{}]*)?\}", text)
    for cmd, conv in table:
        body = function_body(text, "V2_CONVERTER(" + conv)
        if body is None:
            skipped.append("%s: converter %s not found" % (cmd, conv))
            continue
        found = []
        for macro in ("CONVERT_TO_V2_EX", "CONVERT_TO_V2"):
            for args in calls(body, macro):
                if len(args) < 10:
                    continue
                _, old_t, _, old_list, _, size_field, is_count, elem_t = args[:8]
                elem = ("sizeof", elem_t) if is_count.strip() == "NV_TRUE" else ("num", 1)
                found.append({"cmd": cmd, "struct": old_t, "ptr": old_list,
                              "count": [size_field], "elem": elem, "array": None, "cond": None,
                              "source": DEPRECATED})
            if found:
                break
        if not found:
            types = pointer_decls(body)
            tok = re.search(r"CTRL_PARAMS_TOKEN_INIT\(\s*\w+\s*,\s*(\w+)\s*,", body)
            if tok:
                types.setdefault("pParams", tok.group(1))
            copies = [(a[2], None) for a in calls(body, "rmapiParamsCopyOut") if len(a) >= 4]
            copies += [(a[2], a[3]) for a in calls(body, "RmCopyUserForDeprecatedApi")
                       if len(a) >= 4]
            seen = set()
            for ptr_expr, size_expr in copies:
                ref = member_ref(ptr_expr, types)
                if ref is None or ref[0] is None or ref in seen:
                    continue
                if ref[1] == "params":  # pArgs->params: the parameter structure itself
                    continue
                seen.add(ref)
                rule = {"cmd": cmd, "struct": ref[0], "ptr": ref[1], "count": [], "elem": None,
                        "array": None, "cond": None, "source": DEPRECATED}
                m = re.fullmatch(r"sizeof\s*\(\s*(\w+)\s*->\s*(\w+)\s*\)",
                                 " ".join((size_expr or "").split()))
                if m and types.get(m.group(1)):
                    rule["elem"] = ("member", types[m.group(1)], m.group(2))
                elif ref in CONVERTER_EXTENTS:
                    rule["count"] = list(CONVERTER_EXTENTS[ref])
                    rule["elem"] = ("num", 1)
                if rule["elem"] is None:
                    skipped.append("%s: %s.%s copied with no derivable extent" % (cmd, ref[0],
                                                                                ref[1]))
                    rule["elem"] = ("bounded",)
                found.append(rule)
        if not found:
            skipped.append("%s: converter %s copies no embedded pointer" % (cmd, conv))
        rules += found
    return rules, skipped


def handler_copies(read_file):
    """(rules, skipped): the HANDLER_COPIES entries whose file exists in the release and matches
    its `needs` expression. read_file(rel) returns the text or None."""
    rules, skipped = [], []
    for h in HANDLER_COPIES:
        missing = None
        for rel, needs in [(h["file"], h["needs"])] + list(h.get("also", ())):
            text = read_file(rel)
            if text is None or not re.search(needs, rmparse.strip_comments(text), re.S):
                missing = rel
                break
        if missing is not None:
            skipped.append("%s.%s: %s does not copy it" % (h["struct"], h["ptr"], missing))
            continue
        rules.append({"cmd": None, "struct": h["struct"], "ptr": h["ptr"], "count": h["count"],
                      "elem": h["elem"], "array": h.get("array"), "cond": h.get("cond"),
                      "source": h["file"]})
    return rules, skipped


def handler_files():
    """Every file HANDLER_COPIES and NOT_COPIED_NOTES read."""
    out = {h["file"] for h in HANDLER_COPIES}
    out |= {rel for h in HANDLER_COPIES for rel, _ in h.get("also", ())}
    out |= {n["file"] for n in NOT_COPIED_NOTES}
    return sorted(out)


def pointer_members(name, members_of, prefix="", depth=0, with_types=False):
    """[member path] of every pointer member (NvP64 or `T *`) of structure `name`, through
    nested structures and unions and arrays of them ("list[].ptr"); [(path, type)] with
    `with_types`. members_of(type) returns [(member, type, is_array, inline body or None)] or
    None."""
    out = []
    members = members_of(name) if depth < 4 else None
    for m, t, is_array, _ in members or []:
        path = prefix + m + ("[]" if is_array else "")
        if t == "NvP64" or t.endswith("*"):
            out.append((path, t) if with_types else path)
        elif t not in rmparse.BASIC_TYPES:
            out += pointer_members(t, members_of, path + ".", depth + 1, with_types)
    return out


def not_copied_notes(read_file):
    """{(struct, member): note} of the NOT_COPIED_NOTES whose file matches in the release."""
    out = {}
    for n in NOT_COPIED_NOTES:
        text = read_file(n["file"])
        if text is not None and re.search(n["needs"], rmparse.strip_comments(text), re.S):
            out[(n["struct"], n["ptr"])] = n["note"]
    return out
