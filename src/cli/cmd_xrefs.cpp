// cudatool xrefs LIB TARGET... | --from | --string TEXT|/REGEX/ | --path FROM TO: who refers to
// what in a stripped library (docs/xrefs.md).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>

#include "analysis/xref_query.hpp"
#include "analysis/xrefs.hpp"
#include "base/json_writer.hpp"
#include "base/regex.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/function_output.hpp"
#include "cli/json_diagnostics.hpp"
#include "cli/xrefs_output.hpp"

namespace cudatool::cli {
namespace {

struct XrefsOptions {
  NameOptions names;
  std::string lib;
  std::vector<std::string> targets;
  bool from = false;
  std::string string;
  bool ignore_case = false;
  std::vector<std::string> path;
  size_t max = 5;
  bool json = false;
};

struct Context {
  DriverImage& img;
  const XrefIndex& x;
  const DataNames& names;
  const XrefsOptions& o;
  std::string out;
};

void begin_json(JsonWriter& w, Context& c, std::string_view mode) {
  w.begin_object().kv("schema", "cudatool.xrefs/1").kv("path", c.img.path()).kv("mode", mode);
}

void end_json(JsonWriter& w, Context& c) {
  write_xref_stats_json(w, c.x);
  write_diagnostics(w, c.img.diagnostics());
  w.end_object();
  w.finish();
}

std::string plural(size_t n, std::string_view what) {
  return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s");
}

std::string_view target_kind_name(XrefTarget::Kind k) {
  switch (k) {
    case XrefTarget::Kind::kFunction:
      return "function";
    case XrefTarget::Kind::kImport:
      return "import";
    case XrefTarget::Kind::kAddress:
      return "address";
  }
  return "?";
}

// Where references come from: code in a function, code outside every function (.plt stubs,
// gaps the unwind data does not cover), data (a relocated pointer).
struct Whence {
  size_t functions = 0, outside = 0, data = 0;
};

Whence whence_of(const std::vector<const Ref*>& refs) {
  Whence w;
  for (const Ref* r : refs) {
    if (r->kind == RefKind::kPointer)
      ++w.data;
    else if (r->from < 0)
      ++w.outside;
    else
      ++w.functions;
  }
  return w;
}

// " from 3 functions", ", all from data (pointers)", ": 2 from 1 function, 1 from code outside
// any function, 4 from data (pointers)".
std::string whence_text(const Whence& w, size_t functions) {
  std::vector<std::string> parts;
  if (w.functions != 0)
    parts.push_back(fmt::format("{} from {}", w.functions, plural(functions, "function")));
  if (w.outside != 0) parts.push_back(fmt::format("{} from code outside any function", w.outside));
  if (w.data != 0) parts.push_back(fmt::format("{} from data (pointers)", w.data));
  if (parts.empty()) return "";
  if (parts.size() == 1) {
    if (w.functions != 0) return fmt::format(" from {}", plural(functions, "function"));
    return w.outside != 0 ? ", all from code outside any function" : ", all from data (pointers)";
  }
  std::string out = ": ";
  for (size_t i = 0; i < parts.size(); ++i) out += (i == 0 ? "" : ", ") + parts[i];
  return out;
}

// The targets' references (or, with --from, the functions' own references).
int run_targets(Context& c, const std::vector<XrefTarget>& targets) {
  const FunctionMap& map = c.x.map();
  bool empty = false;
  JsonWriter w(c.out);
  if (c.o.json) {
    begin_json(w, c, c.o.from ? "from" : "to");
    w.key(c.o.from ? "functions" : "targets").begin_array();
  }
  for (const auto& t : targets) {
    std::vector<const Ref*> refs = c.o.from ? c.x.refs_from(t.function) : references_to(c.x, t);
    if (refs.empty()) empty = true;
    AddressInfo at = describe_address(c.x, &c.names, t.address);
    if (c.o.json) {
      w.begin_object().kv("input", t.input).kv("kind", target_kind_name(t.kind));
      w.kv("name", t.name).kv_hex("address", t.address);
      if (t.kind == XrefTarget::Kind::kFunction)
        w.kv_hex("end", t.end).kv("size", t.end - t.address);
      else
        w.key("end").null().key("size").null();
      w.kv_or_null("section", at.section);
      if (t.kind == XrefTarget::Kind::kAddress && t.function >= 0)
        w.kv("in_function", map.display_name(map.functions()[static_cast<size_t>(t.function)]));
      else
        w.key("in_function").null();
      Whence wh = whence_of(refs);
      w.kv("count", refs.size()).kv("functions", distinct_functions(refs));
      w.kv("from_data", wh.data).kv("outside_functions", wh.outside);
      w.key("references").begin_array();
      for (const Ref* r : refs) {
        if (c.o.from)
          write_ref_from_json(w, c.x, c.names, *r);
        else
          write_ref_to_json(w, c.x, c.names, *r);
      }
      w.end_array().end_object();
      continue;
    }
    std::string where = at.section.empty() ? "" : fmt::format(", {}", at.section);
    if (t.kind == XrefTarget::Kind::kFunction) {
      where =
          fmt::format(" ({:#x}..{:#x}, {} bytes{})", t.address, t.end, t.end - t.address, where);
    } else if (t.kind == XrefTarget::Kind::kImport) {
      where = fmt::format(" ({:#x}{}{})", t.address, where,
                          t.slots.empty() ? "" : fmt::format(", GOT slot {:#x}", t.slots.front()));
    } else {
      std::string tt = target_text(at);
      where = fmt::format(" ({})", tt);
    }
    if (c.o.from) {
      c.out += fmt::format("{}{}: {}\n", t.name, where, plural(refs.size(), "reference"));
      TextTable tab({"site", "kind", "target", "what"});
      for (const Ref* r : refs) {
        AddressInfo a = describe_address(c.x, &c.names, r->target);
        tab.add({hex(r->site), kind_label(*r), hex(r->target), target_text(a)});
      }
      c.out += tab.render("  ");
    } else {
      c.out += fmt::format("{}{}: {}{}\n", t.name, where, plural(refs.size(), "reference"),
                           whence_text(whence_of(refs), distinct_functions(refs)));
      TextTable tab({"site", "kind", "from"});
      for (const Ref* r : refs) {
        std::string from = site_owner(c.x, c.names, *r);
        bool slot = std::find(t.slots.begin(), t.slots.end(), r->target) != t.slots.end();
        if (slot) {
          from += "  (through the GOT slot)";
        } else if (r->target != t.address) {
          from += fmt::format("  → +{:#x}", r->target - t.address);
        }
        tab.add({hex(r->site), kind_label(*r), from});
      }
      c.out += tab.render("  ");
    }
  }
  if (c.o.json) {
    w.end_array();
    end_json(w, c);
  }
  return empty ? kExitFindings : kExitOk;
}

int run_strings(Context& c) {
  const std::string& q = c.o.string;
  const bool is_regex = q.size() >= 2 && q.front() == '/' && q.back() == '/';
  std::optional<PosixRegex> re;
  if (is_regex) {
    auto compiled = PosixRegex::compile(q.substr(1, q.size() - 2), c.o.ignore_case);
    if (!compiled) {
      print_error(fmt::format("--string: {}", compiled.error().message()));
      return kExitBadInput;
    }
    re.emplace(std::move(*compiled));
  }
  auto lower = [](std::string_view s) {
    std::string l(s);
    for (char& ch : l) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return l;
  };
  const std::string needle = c.o.ignore_case ? lower(q) : q;
  std::vector<const CString*> hits;
  for (const auto& s : c.x.strings()) {
    bool m = re ? re->search(s.text)
                : (c.o.ignore_case ? lower(s.text).find(needle) : s.text.find(needle)) !=
                      std::string_view::npos;
    if (m) hits.push_back(&s);
  }
  std::vector<std::vector<const Ref*>> users;
  size_t total = 0;
  std::vector<const Ref*> all;
  for (const CString* s : hits) {
    auto refs = c.x.refs_to(s->address, s->address + 1);
    std::erase_if(refs, [](const Ref* r) {
      return r->kind != RefKind::kLea && r->kind != RefKind::kPointer;
    });
    total += refs.size();
    all.insert(all.end(), refs.begin(), refs.end());
    users.push_back(std::move(refs));
  }
  if (c.o.json) {
    JsonWriter w(c.out);
    begin_json(w, c, "string");
    w.key("query").begin_object().kv("text", is_regex ? q.substr(1, q.size() - 2) : q);
    w.kv("regex", is_regex).kv("ignore_case", c.o.ignore_case).end_object();
    w.kv("count", hits.size()).kv("references", total).kv("functions", distinct_functions(all));
    w.key("strings").begin_array();
    for (size_t i = 0; i < hits.size(); ++i) {
      w.begin_object().kv_hex("address", hits[i]->address).kv("section", hits[i]->section);
      w.kv("text", hits[i]->text).kv("count", users[i].size());
      w.key("references").begin_array();
      for (const Ref* r : users[i]) write_ref_to_json(w, c.x, c.names, *r);
      w.end_array().end_object();
    }
    w.end_array();
    end_json(w, c);
  } else {
    c.out += fmt::format("strings {} {}: {} of {} referenced strings, {} from {}\n",
                         is_regex ? "matching" : "containing", quoted(q, 200), hits.size(),
                         c.x.strings().size(), plural(total, "reference"),
                         plural(distinct_functions(all), "function"));
    for (size_t i = 0; i < hits.size(); ++i) {
      c.out += fmt::format("{} {} {}\n", hex(hits[i]->address), hits[i]->section,
                           quoted(hits[i]->text, 120));
      TextTable tab({"site", "kind", "from"});
      for (const Ref* r : users[i])
        tab.add({hex(r->site), kind_label(*r), site_owner(c.x, c.names, *r)});
      c.out += tab.render("    ");
    }
  }
  return hits.empty() ? kExitFindings : kExitOk;
}

int run_path(Context& c, const XrefTarget& from, const XrefTarget& to) {
  if (from.function < 0) {
    print_error(fmt::format("--path {}: not in a function", from.input));
    return kExitBadInput;
  }
  if (to.kind == XrefTarget::Kind::kAddress && to.function < 0) {
    print_error(fmt::format("--path … {}: neither a function nor an import", to.input));
    return kExitBadInput;
  }
  PathResult p = shortest_paths(c.x, from, to, c.o.max);
  auto step_note = [&](const PathStep& s) {
    std::string n = fmt::format("{} at {}", kind_label(*s.ref), hex(s.ref->site));
    if (!s.pointer) return n;
    auto named = [&](uint64_t a) {
      AddressInfo i = describe_address(c.x, &c.names, a);
      std::string t = target_text(i);
      return t.empty() ? hex(a) : fmt::format("{} at {}", t, hex(a));
    };
    if (s.slot == 0) return n + ", takes the address of " + named(s.ref->target);
    if (s.slot == s.ref->target) return n + ", reads the pointer in " + named(s.slot);
    return n + fmt::format(", takes {}, whose slot {} points here", named(s.ref->target),
                           named(s.slot));
  };
  if (c.o.json) {
    JsonWriter w(c.out);
    begin_json(w, c, "path");
    w.key("from").begin_object().kv("input", from.input).kv("name", from.name);
    w.kv_hex("address", from.address).end_object();
    w.key("to").begin_object().kv("input", to.input).kv("name", to.name);
    w.kv_hex("address", to.address).end_object();
    w.kv("found", p.found).kv("through_pointer", p.through_pointer);
    w.kv("length", p.length).kv("shortest_count", p.shortest_count);
    w.key("chains").begin_array();
    for (const auto& ch : p.chains) {
      w.begin_object().key("steps").begin_array();
      for (const auto& s : ch) {
        w.begin_object().kv("from", node_name(c.x, s.from)).kv("to", node_name(c.x, s.to));
        w.kv_hex("site", s.ref->site).kv("kind", ref_kind_name(s.ref->kind));
        w.kv("pointer", s.pointer);
        if (s.pointer)
          w.kv_hex("pointer_to", s.ref->target);
        else
          w.key("pointer_to").null();
        if (s.slot != 0) {
          w.kv_hex("slot", s.slot);
          w.kv_or_null("slot_name", describe_address(c.x, &c.names, s.slot).name);
        } else {
          w.key("slot").null().key("slot_name").null();
        }
        w.end_object();
      }
      w.end_array().end_object();
    }
    w.end_array();
    end_json(w, c);
  } else if (!p.found) {
    c.out += fmt::format(
        "{} → {}: no chain, through direct calls and tail jumps or through "
        "pointers\n",
        from.name, to.name);
  } else {
    c.out += fmt::format(
        "{} → {}: {} shortest chain{} of {} step{}{}\n", from.name, to.name, p.shortest_count,
        p.shortest_count == 1 ? "" : "s", p.length, p.length == 1 ? "" : "s",
        p.chains.size() < p.shortest_count ? fmt::format(" ({} shown; --max N)", p.chains.size())
                                           : "");
    if (p.through_pointer) {
      c.out +=
          "no chain of direct calls and tail jumps exists: every chain passes through a "
          "pointer (marked *)\n";
    }
    for (size_t i = 0; i < p.chains.size(); ++i) {
      c.out += fmt::format("chain {}:\n  {}\n", i + 1, node_name(c.x, p.chains[i].front().from));
      for (const auto& s : p.chains[i]) {
        c.out += fmt::format("  {} {}   ({})\n", s.pointer ? "*→" : " →", node_name(c.x, s.to),
                             step_note(s));
      }
    }
  }
  return p.found ? kExitOk : kExitFindings;
}

int run_xrefs(const XrefsOptions& o) {
  const int modes =
      (!o.path.empty() ? 1 : 0) + (!o.string.empty() ? 1 : 0) + (!o.targets.empty() ? 1 : 0);
  if (modes != 1) {
    print_error("give TARGET..., --string TEXT or --path FROM TO (one of them)");
    return kExitBadInput;
  }
  if (o.from && o.targets.empty()) {
    print_error("--from needs TARGET...");
    return kExitBadInput;
  }
  auto img = open_library(o.lib);
  if (!img) return kExitBadInput;
  named_function_map(*img, o.names);
  const XrefIndex& x = img->facet<XrefIndex>();
  DataNames names(*img);
  Context c{*img, x, names, o, {}};
  int status = kExitOk;
  if (!o.string.empty()) {
    status = run_strings(c);
  } else {
    const auto& args = o.path.empty() ? o.targets : o.path;
    std::vector<XrefTarget> targets;
    for (const auto& a : args) {
      auto t = resolve_xref_target(x, a);
      if (!t) {
        print_error(t.error());
        return kExitBadInput;
      }
      if (o.from && t->function < 0) {
        print_error(fmt::format("--from {}: not in a function", a));
        return kExitBadInput;
      }
      targets.push_back(std::move(*t));
    }
    status = o.path.empty() ? run_targets(c, targets) : run_path(c, targets[0], targets[1]);
  }
  if (status == kExitBadInput) return status;
  emit(c.out);
  int diag = std::max(report_diagnostics(img->diagnostics()), warn_damaged_function_map(x.map()));
  return diag != kExitOk ? diag : status;
}

}  // namespace

void register_xrefs(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<XrefsOptions>();
  auto* cmd = app.add_subcommand(
      "xrefs",
      "Who calls, jumps to, points at or loads what; which functions use a string; "
      "call chains");
  cmd->add_option("LIB", o->lib, "library to read")->required();
  cmd->add_option("TARGET", o->targets,
                  "function (export, table or dispatch name such as cuMemAlloc_v2.impl, "
                  "fn_<hex>), import (ioctl, ioctl@plt) or address (0x…)");
  cmd->add_flag("--from", o->from, "list what the TARGET functions call and refer to instead");
  cmd->add_option("--string", o->string,
                  "referenced C strings containing TEXT (or matching /REGEX/, POSIX extended), "
                  "with the functions that use them");
  cmd->add_flag("-i,--ignore-case", o->ignore_case, "--string ignores case");
  cmd->add_option("--path", o->path, "shortest call chains from FROM to TO")->expected(2);
  cmd->add_option("--max", o->max, "chains --path prints at most")->capture_default_str();
  cmd->add_flag("--json", o->json, "print JSON (schema cudatool.xrefs/1)");
  add_names_option(cmd, o->names);
  cmd->footer(
      "References are found by one sweep of the executable sections (direct calls, tail jumps,\n"
      "RIP-relative lea/loads/stores) and the dynamic relocations (pointers in data). Kinds:\n"
      "call, tail_jump, pointer, lea, load, store. See docs/xrefs.md.\n"
      "Exit status: 0 found, 1 a target without references / no string / no chain, 2 bad input.\n"
      "Examples:\n"
      "  cudatool xrefs LIB ioctl                      # every call site of ioctl@plt\n"
      "  cudatool xrefs LIB cuMemAlloc_v2.impl --from  # what the implementation calls\n"
      "  cudatool xrefs LIB --string 'out of memory'\n"
      "  cudatool xrefs LIB --string '/^CUDA_ERROR_[A-Z_]+$/'\n"
      "  cudatool xrefs LIB --path cuCtxCreate_v2 ioctl --max 3");
  cmd->callback([o, exit_code] { *exit_code = run_xrefs(*o); });
}

}  // namespace cudatool::cli
