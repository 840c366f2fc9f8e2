"""Text parsers for NVIDIA's open-gpu-kernel-modules headers and sources.

Every function takes the text of one file (or a few) and returns plain Python data; nothing here
reads the disk or runs a compiler, so tools/rm_tables/test_rmparse.py can feed it snippets.
The facts extracted are names and numbers only; sizes and offsets come from rmprobe.py, which
compiles the real headers.
"""

import re

_LEXEME = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'', re.S)


def strip_comments(text):
    """Removes /* */ and // comments (one left-to-right pass, so a comment opener inside a
    string or inside the other kind of comment is not taken for one); block comments keep their
    line breaks so that line numbers stay right."""

    def repl(m):
        t = m.group(0)
        if t.startswith("//"):
            return ""
        if t.startswith("/*"):
            return "\n" * t.count("\n")
        return t

    return _LEXEME.sub(repl, text)


def _int(s):
    s = s.strip().rstrip("uUlL")
    return int(s, 0)


# --- status codes (nvstatuscodes.h) -----------------------------------------------------------

_STATUS = re.compile(
    r'NV_STATUS_CODE\(\s*(\w+)\s*,\s*(0x[0-9A-Fa-f]+|\d+)\s*,\s*"((?:[^"\\]|\\.)*)"\s*\)')


def parse_status_codes(text):
    """[(value, name, message)] in file order, from NV_STATUS_CODE(name, value, "message")."""
    out = []
    for m in _STATUS.finditer(text):
        out.append((_int(m.group(2)), m.group(1), m.group(3)))
    return out


# --- escapes (nv-ioctl-numbers.h, nv-ioctl-numa.h, nv_escape.h) -------------------------------

_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+(.+?)[ \t]*$", re.M)


def _defines(text):
    return [(m.group(1), m.group(2).strip()) for m in _DEFINE.finditer(strip_comments(text))]


def parse_escapes(text, known=None):
    """[(nr, name)] for every `#define NV_ESC_* <expr>` whose expression evaluates to an integer.

    `known` maps macro names already seen (NV_IOCTL_BASE from another header) to values; the
    expression may use integers, parentheses, + and those names.
    """
    env = dict(known or {})
    for name, expr in _defines(text):
        value = _eval_int(expr, env)
        if value is not None:
            env[name] = value
    out = []
    for name, expr in _defines(text):
        if name.startswith("NV_ESC_") and name in env:
            out.append((env[name], name))
    return out, env


_TOKEN = re.compile(r"\s*(0x[0-9A-Fa-f]+[uUlL]*|\d+[uUlL]*|[A-Za-z_]\w*|[()+\-*|<>]{1,2})")


def _eval_int(expr, env):
    """Evaluates a small integer expression (names from env, + - * | << and parentheses)."""
    pos, parts = 0, []
    expr = expr.strip()
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m:
            return None
        tok = m.group(1)
        pos = m.end()
        if re.fullmatch(r"0x[0-9A-Fa-f]+[uUlL]*|\d+[uUlL]*", tok):
            parts.append(str(_int(tok)))
        elif re.fullmatch(r"[A-Za-z_]\w*", tok):
            if tok not in env:
                return None
            parts.append(str(env[tok]))
        elif tok in ("(", ")", "+", "-", "*", "|", "<<"):
            parts.append(tok)
        else:
            return None
    if not parts:
        return None
    try:
        value = eval(" ".join(parts), {"__builtins__": {}}, {})  # only digits and operators
    except Exception:
        return None
    return value if isinstance(value, int) else None


# --- which struct an escape takes (case blocks of nv.c, escape.c, osapi.c) ---------------------

_CASE = re.compile(r"\bcase\s+(NV_ESC_\w+)\s*:")
BASIC_TYPES = {"NvU8", "NvU16", "NvU32", "NvU64", "NvS32", "NvS64", "NvHandle", "NvP64", "int",
                "char", "void", "size_t", "NvV32"}


def parse_escape_structs(source):
    """{escape name: [struct type, ...]} from `case NV_ESC_X:` blocks of a C source.

    A type counts when the block compares a size with sizeof(TYPE) or sizeof(*var) where var is
    declared in the block as `TYPE *var`; for NV_ESC_CARD_INFO-style blocks that divide the
    argument size by sizeof(TYPE) the type is reported with a trailing "[]" (array argument).
    """
    text = strip_comments(source)
    cases = list(_CASE.finditer(text))
    out = {}
    for i, m in enumerate(cases):
        end = cases[i + 1].start() if i + 1 < len(cases) else len(text)
        block = text[m.end():end]
        # Stop at the end of the switch (a `default:` at the same level is close enough).
        d = re.search(r"\bdefault\s*:", block)
        if d:
            block = block[:d.start()]
        decls = {v: t for t, v in re.findall(r"\b([A-Za-z_]\w*)\s*\*\s*([A-Za-z_]\w*)\s*[;=]",
                                             block)}
        types = []
        for arg in re.findall(r"sizeof\s*\(\s*([^()]*?)\s*\)", block):
            t = None
            star = re.fullmatch(r"\*\s*([A-Za-z_]\w*)", arg)
            if star:
                t = decls.get(star.group(1))
            elif re.fullmatch(r"[A-Za-z_]\w*", arg):
                t = arg
            if not t or t in BASIC_TYPES and not re.search(
                    r"/\s*sizeof\s*\(\s*" + re.escape(arg) + r"\s*\)", block):
                continue
            if re.search(r"/\s*sizeof\s*\(\s*" + re.escape(arg) + r"\s*\)", block):
                t += "[]"
            if t not in types:
                types.append(t)
        if types:
            types.sort(key=lambda t: block.find(t.rstrip("[]")))  # in order of appearance
            out.setdefault(m.group(1), [])
            for t in types:
                if t not in out[m.group(1)]:
                    out[m.group(1)].append(t)
    return out


# --- control commands (ctrl/*.h) and NVOC method tables (generated/g_*_nvoc.c) ----------------

_CTRL_FINN = re.compile(
    r'^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+\(\s*(0x[0-9A-Fa-f]+)[uU]?\s*\)[ \t]*'
    r'/\*\s*finn:\s*Evaluated from\s*"([^"]*)"\s*\*/', re.M)
_CTRL_PLAIN = re.compile(
    r'^[ \t]*#[ \t]*define[ \t]+(\w*_CTRL_CMD_\w+)[ \t]+\(?\s*(0x[0-9A-Fa-f]+)[uU]?\s*\)?[ \t]*(?:/[/*].*)?$',
    re.M)


def parse_ctrl_header(text):
    """(commands, plain) from one ctrl/*.h header.

    commands: [(id, name, message-id params type or None)] for every define that FINN marks as
    evaluated from `(..._INTERFACE_ID << 8) | ...`: the form every control command has since the
    headers became FINN-generated. plain: [(value, name)] for other `*_CTRL_CMD_*` hex defines,
    used only to name NVOC method ids that have no FINN-marked define.
    """
    commands, seen = [], set()
    for m in _CTRL_FINN.finditer(text):
        name, value, expr = m.group(1), int(m.group(2), 16), m.group(3)
        if "INTERFACE_ID" not in expr or "<<" not in expr:
            continue
        mm = re.search(r"\b(\w+)_MESSAGE_ID\b", expr)
        commands.append((value, name, mm.group(1) if mm else None))
        seen.add(name)
    plain = []
    for m in _CTRL_PLAIN.finditer(text):
        if m.group(1) not in seen and not m.group(1).endswith("_MESSAGE_ID"):
            plain.append((int(m.group(2), 16), m.group(1)))
    return commands, plain


_DOC_CMD = re.compile(r"^[ \t]*(?:/\*+|\*)[ \t]*(NV[0-9A-F]{4}_CTRL_CMD_\w+)[ \t]*$")
_MESSAGE_ID = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)_MESSAGE_ID\b")


def parse_ctrl_doc_names(text):
    """{parameter structure: command name} from the documentation comments of a ctrl/*.h header.

    A command's block starts with a comment whose line is the command's name alone
    (` * NV2080_CTRL_CMD_INTERNAL_STATIC_KGR_GET_FECS_TRACE_DEFINES`) and ends at the
    `<PARAMS>_MESSAGE_ID` define of its parameter structure. Used only to name NVOC method ids that
    no define names (the command's define was dropped from the header, its comment kept).
    """
    out, last = {}, None
    for line in text.splitlines():
        m = _DOC_CMD.match(line)
        if m:
            last = m.group(1)
            continue
        m = _MESSAGE_ID.match(line)
        if m:
            if last:
                out.setdefault(m.group(1), last)
            last = None
    return out


_HANDLER = re.compile(r"[a-z][A-Za-z0-9]*?CtrlCmd([A-Z]\w*)")


def derive_ctrl_name(cid, handler):
    """NVIDIA's naming convention applied to an NVOC handler: `subdeviceCtrlCmdGpuAcquireX` of
    0x2080xxxx gives NV2080_CTRL_CMD_GPU_ACQUIRE_X; None for a handler of another form.

    A derivation, not a header's name: it gives the define's name for 977 of the 1,343 commands of
    580.142 that have both (NVIDIA abbreviates and reorders the rest), so the tables flag it
    (CTRL_NAME_DERIVED) and keep the handler beside it.
    """
    m = _HANDLER.fullmatch(handler or "")
    if not m:
        return None
    words = re.findall(r"[A-Z]+[0-9]*(?![a-z])|[A-Z][a-z0-9]*|[0-9]+[a-z]*", m.group(1))
    return "NV%04X_CTRL_CMD_%s" % (cid >> 16, "_".join(w.upper() for w in words))


def parse_finn_interfaces(text):
    """[(interface id, name)] from `#define FINN_<NAME>_INTERFACE_ID (0xCCCCII)` lines of
    g_finn_rm_api.h; the interface id is the top 24 bits of a control command id."""
    out = []
    for name, expr in _defines(text):
        m = re.fullmatch(r"FINN_(\w+)_INTERFACE_ID", name)
        v = re.fullmatch(r"\(?\s*(0x[0-9A-Fa-f]+)[uU]?\s*\)?", expr)
        if m and v:
            out.append((int(v.group(1), 16), m.group(1)))
    return out


def parse_ctrl_categories(text, class_id):
    """[(interface id, name)] from the category defines of a ctrl/ctrlXXXX/ctrlXXXXbase.h
    header (`#define NV2080_CTRL_GPU (0x01)`, `..._LEGACY_NON_PRIVILEGED (0x81)`), class_id being
    the XXXX of the file name."""
    out = []
    prefix = "NV%04X_CTRL_" % class_id
    for name, expr in _defines(text):
        if not name.startswith(prefix) or "_CMD" in name:
            continue
        v = re.fullmatch(r"\(\s*(0x[0-9A-Fa-f]{1,2})\s*\)", expr.split("/*")[0].strip())
        if v:
            out.append(((class_id << 8) | int(v.group(1), 16), name))
    return out


_NVOC = re.compile(
    r"/\*methodId=\*/\s*(0x[0-9A-Fa-f]+)[uU]?\s*,\s*"
    r"/\*paramSize=\*/\s*(sizeof\(\s*(\w+)\s*\)|0)[^,]*,\s*"
    r"/\*pClassInfo=\*/\s*&\(__nvoc_class_def_(\w+)\.classInfo\)\s*,"
    r"(?:\s*#if[^\n]*\n\s*/\*func=\*/\s*\"(\w+)\")?")


def parse_nvoc_methods(text):
    """[(id, params type or None, owning NVOC class, function name or None)] from a g_*_nvoc.c."""
    out = []
    for m in _NVOC.finditer(text):
        out.append((int(m.group(1), 16), m.group(3), m.group(4), m.group(5)))
    return out


# --- classes (g_allclasses.h, resource_list.h) ------------------------------------------------

_ALLCLASS = re.compile(
    r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+\(\s*(0x[0-9A-Fa-f]+)\s*\)[ \t]*(//[ \t]*alias)?", re.M)


def parse_allclasses(text):
    """[(id, name, is_alias)] from the #define part of g_allclasses.h, in file order."""
    return [(int(m.group(2), 16), m.group(1), bool(m.group(3))) for m in _ALLCLASS.finditer(text)]


def parse_class_header_defines(text):
    """{name: id} for `#define NAME (0x...)` lines of a class/cl*.h header."""
    out = {}
    for name, expr in _defines(text):
        m = re.fullmatch(r"\(?\s*(0x[0-9A-Fa-f]+)[uU]?\s*\)?", expr)
        if m:
            out[name] = int(m.group(1), 16)
    return out


def parse_class_header_class(text, file_id):
    """The class a class/clXXXX.h header defines: the first `#define NAME (0x0000XXXX)` whose
    value is the XXXX of the file name, skipping NVXXXX_* method and field names. None when
    the header defines no such name (notification or software-method headers)."""
    for name, expr in _defines(text):
        m = re.fullmatch(r"\(?\s*(0x[0-9A-Fa-f]+)[uU]?\s*\)?", expr)
        if not m or int(m.group(1), 16) != file_id:
            continue
        if re.match(r"NV%04X_" % file_id, name) or name.endswith("_MESSAGE_ID"):
            continue
        return name
    return None


def parse_resource_list(text):
    """[(external class name, internal class, alloc params type or None, required)] from the
    RS_ENTRY(...) table of src/nvidia/src/kernel/rmapi/resource_list.h."""
    out = []
    for chunk in text.split("RS_ENTRY(")[1:]:
        ext = re.search(r"/\*\s*External Class\s*\*/\s*(\w+)", chunk)
        internal = re.search(r"/\*\s*Internal Class\s*\*/\s*(\w+)", chunk)
        alloc = re.search(r"/\*\s*Alloc Param Info\s*\*/\s*(RS_NONE|RS_REQUIRED|RS_OPTIONAL)"
                          r"(?:\(\s*(\w+)\s*\))?", chunk)
        if not (ext and internal and alloc):
            continue
        params = alloc.group(2) if alloc.group(1) != "RS_NONE" else None
        out.append((ext.group(1), internal.group(1), params, alloc.group(1) == "RS_REQUIRED"))
    return out


# --- UVM ioctls (uvm_ioctl.h, uvm_linux_ioctl.h) ----------------------------------------------

def parse_uvm_ioctls(text):
    """[(number, name)] for `#define UVM_X UVM_IOCTL_BASE(n)` and `#define UVM_X 0x3000000n`."""
    out = []
    for name, expr in _defines(text):
        if not name.startswith("UVM_") or name.startswith("UVM_IOCTL_BASE"):
            continue
        m = re.fullmatch(r"UVM_IOCTL_BASE\(\s*(\d+)\s*\)", expr)
        if m:
            out.append((int(m.group(1)), name))
            continue
        m = re.fullmatch(r"\(?\s*(0x3[0-9A-Fa-f]{7})\s*\)?", expr)
        if m:
            out.append((int(m.group(1), 16), name))
    return out


# --- struct members (for field layouts) -------------------------------------------------------

def find_struct_body(text, name):
    """The text between the braces of `typedef struct [tag] {...} name;` or `struct name {...};`,
    or None."""
    text = strip_comments(text)
    m = re.search(r"\}\s*" + re.escape(name) + r"\s*;", text)
    if m:
        close = m.start()
        depth, i = 0, close
        while i >= 0:
            if text[i] == "}":
                depth += 1
            elif text[i] == "{":
                depth -= 1
                if depth == 0:
                    head = text[max(0, i - 200):i]
                    if re.search(r"typedef\s+(struct|union)(\s+\w+)?\s*$", head):
                        return text[i + 1:close]
                    return None
            i -= 1
        return None
    m = re.search(r"\bstruct\s+" + re.escape(name) + r"\s*\{", text)
    if m:
        start, depth, i = m.end(), 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        return text[start:i - 1] if depth == 0 else None
    return None


_DECL_ALIGNED = re.compile(r"NV_DECLARE_ALIGNED\(\s*(.*?)\s*,\s*\d+\s*\)")
_ALIGN_BYTES = re.compile(r"NV_ALIGN_BYTES\(\s*\d+\s*\)|__attribute__\s*\(\(.*?\)\)")


def parse_members(body, with_bodies=False):
    """[(name, type, is_array)] of a struct body; nested struct/union members have type
    "struct"/"union"; bit-fields and unparsable declarations are skipped. `with_bodies`: 4-tuples
    whose last item is the body of a nested struct/union declared in place (else None)."""
    body = "\n".join(l for l in body.split("\n") if not l.strip().startswith("#"))
    body = _DECL_ALIGNED.sub(r"\1", body)
    body = _ALIGN_BYTES.sub("", body)
    decls, depth, cur = [], 0, ""
    for ch in body:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == ";" and depth == 0:
            decls.append(cur.strip())
            cur = ""
        else:
            cur += ch
    out = []
    for d in decls:
        d = " ".join(d.split())
        if not d:
            continue
        if "{" in d:
            kind = "union" if d.startswith("union") else "struct"
            m = re.search(r"\}\s*([A-Za-z_]\w*)\s*((?:\[[^\]]*\])*)$", d)
            if m:
                inner = d[d.index("{") + 1:d.rindex("}")]
                out.append((m.group(1), kind, bool(m.group(2))) + ((inner,) if with_bodies else ()))
            continue
        if ":" in d or "(" in d:
            continue  # bit-field or function pointer
        parts = [p.strip() for p in d.split(",")]
        first = re.fullmatch(r"(.+?)\s*(\**)\s*([A-Za-z_]\w*)\s*((?:\[[^\]]*\])*)", parts[0])
        if not first:
            continue
        base = first.group(1).replace("const ", "").strip()
        decls_here = [(first.group(2), first.group(3), first.group(4))]
        for p in parts[1:]:
            mm = re.fullmatch(r"(\**)\s*([A-Za-z_]\w*)\s*((?:\[[^\]]*\])*)", p)
            if mm:
                decls_here.append((mm.group(1), mm.group(2), mm.group(3)))
        for stars, name, dims in decls_here:
            out.append((name, base + stars, bool(dims)) + ((None,) if with_bodies else ()))
    return out


def defined_types(text):
    """Names of the types a header defines: `typedef struct|union|enum [tag] {...} name;`
    (name and tag), `typedef ... name;` and `struct tag {...};`. Member names of nested
    structures (`} member;` inside a body) are not types and are not returned."""
    text = strip_comments(text)
    out = set()
    pos = 0
    for m in re.finditer(r"\b(typedef\s+)?(struct|union|enum)\s*(\w*)\s*\{|\btypedef\b", text):
        if m.start() < pos:
            continue  # inside a body already scanned
        if m.group(2) is None:  # plain typedef: the last identifier before the next ';'
            semi = text.find(";", m.end())
            decl = text[m.end():semi]
            if "{" in decl:
                continue
            ids = re.findall(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*$", decl)
            fn = re.search(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)", decl)  # function pointer type
            if fn:
                out.add(fn.group(1))
            elif ids:
                out.add(ids[-1])
            pos = semi
            continue
        if m.group(3):
            out.add(m.group(3))
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        pos = i
        if m.group(1):
            tail = re.match(r"\s*([A-Za-z_]\w*)", text[i:])
            if tail:
                out.add(tail.group(1))
    return out
