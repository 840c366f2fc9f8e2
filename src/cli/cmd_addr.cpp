// cudatool addr LIB ADDR...: which function holds each address.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>

#include "analysis/function_map.hpp"
#include "base/hex.hpp"
#include "base/json_writer.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/function_output.hpp"
#include "cli/json_diagnostics.hpp"

namespace cudatool::cli {
namespace {

struct AddrOptions {
  NameOptions names;
  std::string lib;
  std::vector<std::string> addrs;
  std::string base;
  bool json = false;
};

struct Lookup {
  std::string input;
  std::optional<uint64_t> runtime;  // with --base
  uint64_t address = 0;             // in the library's own address space
  std::string error;                // the input could not be turned into an address
  const Function* function = nullptr;
  std::optional<Gap> gap;
  std::string_view section;
};

// The library address a runtime address stands for. `base` is where the library's first
// mapping (file offset 0) starts, as /proc/PID/maps shows it; the first PT_LOAD is mapped
// there, so base - its page-aligned p_vaddr is the load bias (0 for every libcuda build).
uint64_t first_load_page(const elf::ElfImage& elf) {
  for (const auto& p : elf.segments()) {
    if (p.p_type == PT_LOAD) return p.p_vaddr & ~uint64_t{0xfff};
  }
  return 0;
}

std::optional<uint64_t> parse_address(std::string_view s) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);  // "lib.so(+0x1234)" in glibc backtraces
  return parse_u64(s, /*allow_decimal=*/false);
}

// One address of the command line: where it falls in the map (or why it cannot be looked up).
Lookup look_up(const FunctionMap& map, const std::string& input, std::optional<uint64_t> base,
               uint64_t page, std::optional<std::vector<Gap>>& gaps) {
  Lookup l;
  l.input = input;
  auto v = parse_address(input);
  if (!v) {
    l.error = "not a hexadecimal address";
  } else if (base) {
    l.runtime = *v;
    if (*v < *base) {
      l.error = fmt::format("below --base {:#x}", *base);
    } else {
      l.address = *v - *base + page;
    }
  } else {
    l.address = *v;
  }
  if (!l.error.empty()) return l;
  l.function = map.find(l.address);
  l.section = map.exec_section(l.address);
  if (l.function == nullptr) {
    if (!gaps) gaps = map.gaps();
    auto it = std::upper_bound(gaps->begin(), gaps->end(), l.address,
                               [](uint64_t x, const Gap& g) { return x < g.start; });
    if (it != gaps->begin() && l.address < std::prev(it)->end) l.gap = *std::prev(it);
  }
  return l;
}

void write_lookup_json(JsonWriter& w, const FunctionMap& map, const Lookup& l) {
  w.begin_object().kv("input", l.input);
  if (!l.error.empty()) {
    w.key("address").null().kv("error", l.error).end_object();
    return;
  }
  w.kv_hex("address", l.address);
  if (l.runtime)
    w.kv_hex("runtime_address", *l.runtime);
  else
    w.key("runtime_address").null();
  w.kv_or_null("section", l.section);
  if (l.function != nullptr) {
    w.key("function");
    write_function_json(w, map, *l.function);
    w.kv("offset", l.address - l.function->start);
    w.kv("location",
         fmt::format("{}+{:#x}", map.display_name(*l.function), l.address - l.function->start));
  } else {
    w.key("function").null().key("offset").null().key("location").null();
  }
  if (l.gap) {
    w.key("gap").begin_object().kv_hex("start", l.gap->start).kv_hex("end", l.gap->end);
    w.kv("size", l.gap->size()).kv("kind", gap_kind_name(l.gap->kind)).end_object();
  } else {
    w.key("gap").null();
  }
  w.end_object();
}

std::string render_addr_json(DriverImage& img, const FunctionMap& map, std::optional<uint64_t> base,
                             const std::vector<Lookup>& res) {
  std::string out;
  JsonWriter w(out);
  w.begin_object().kv("schema", "cudatool.addr/1").kv("path", img.path());
  if (base)
    w.kv_hex("base", *base);
  else
    w.key("base").null();
  w.key("results").begin_array();
  for (const auto& l : res) write_lookup_json(w, map, l);
  w.end_array();
  write_diagnostics(w, img.diagnostics());
  w.end_object();
  w.finish();
  return out;
}

// The table's row of one lookup: location, function, size, section.
std::vector<std::string> lookup_row(const FunctionMap& map, const Lookup& l, bool with_base) {
  std::vector<std::string> row{l.input};
  if (with_base) row.push_back(l.error.empty() ? hex(l.address) : "-");
  if (!l.error.empty()) {
    row.push_back(fmt::format("error: {}", l.error));
  } else if (l.function != nullptr) {
    const Function& f = *l.function;
    row.push_back(fmt::format("{}+{:#x}", map.display_name(f), l.address - f.start));
    row.push_back(fmt::format("{:#x}..{:#x}", f.start, f.end()));
    row.push_back(fmt::format("{}", f.size));
    row.push_back(l.section.empty() ? "-" : std::string(l.section));
  } else {
    row.push_back("no function");
    if (l.gap) {
      row.push_back(fmt::format("gap {:#x}..{:#x} ({})", l.gap->start, l.gap->end,
                                gap_kind_name(l.gap->kind)));
      row.push_back(fmt::format("{}", l.gap->size()));
    } else {
      row.push_back("outside the executable sections");
      row.push_back("-");
    }
    row.push_back(l.section.empty() ? "-" : std::string(l.section));
  }
  return row;
}

std::string render_addr_text(const FunctionMap& map, bool with_base,
                             const std::vector<Lookup>& res) {
  std::vector<std::string> head{"address"};
  std::vector<bool> right{false};
  if (with_base) {
    head.push_back("library address");
    right.push_back(false);
  }
  for (const char* h : {"location", "function", "size", "section"}) head.push_back(h);
  right.insert(right.end(), {false, false, true, false});
  TextTable t(head, right);
  for (const auto& l : res) t.add(lookup_row(map, l, with_base));
  std::string out = t.render();
  for (const auto& l : res) {
    if (l.function == nullptr) continue;
    auto n = map.names(*l.function);
    if (n.size() < 2) continue;
    std::string s;
    for (const auto& x : n) s += fmt::format("{}{} ({})", s.empty() ? "" : ", ", x.name, x.source);
    out += fmt::format("{}: also known as {}\n", l.input, s);
  }
  return out;
}

int run_addr(const AddrOptions& o) {
  std::optional<uint64_t> base;
  if (!o.base.empty()) {
    base = parse_address(o.base);
    if (!base) {
      print_error(fmt::format("--base {}: not a hexadecimal address", o.base));
      return kExitBadInput;
    }
  }
  DriverImage* img = open_library_until_exit(o.lib);
  if (!img) return kExitBadInput;
  const FunctionMap& map = named_function_map(*img, o.names);
  const uint64_t page = first_load_page(img->elf());
  std::vector<Lookup> res;
  std::optional<std::vector<Gap>> gaps;
  for (const auto& a : o.addrs) res.push_back(look_up(map, a, base, page, gaps));
  emit(o.json ? render_addr_json(*img, map, base, res)
              : render_addr_text(map, base.has_value(), res));
  bool bad = false, missing = false;
  for (const auto& l : res) {
    if (!l.error.empty()) print_error(fmt::format("address {}: {}", l.input, l.error));
    bad = bad || !l.error.empty();
    missing = missing || (l.error.empty() && l.function == nullptr);
  }
  int status = report_diagnostics(img->diagnostics());
  if (bad) return kExitBadInput;
  if (status == kExitOk && missing) status = kExitFindings;
  return status;
}

}  // namespace

void register_addr(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<AddrOptions>();
  auto* cmd = app.add_subcommand("addr", "Which function of a library holds each address");
  cmd->add_option("LIB", o->lib, "library to read")->required();
  cmd->add_option("ADDR", o->addrs,
                  "addresses in hex (0x prefix optional; a leading + as in \"lib.so(+0x1a2b)\" "
                  "is accepted)")
      ->required();
  cmd->add_option("--base", o->base,
                  "the ADDRs are runtime addresses of a process in which the library is mapped "
                  "at BASE: the start of its first mapping (file offset 0) in /proc/PID/maps, "
                  "or the load address a crash log or gdb's `info proc mappings` shows");
  cmd->add_flag("--json", o->json, "print JSON (schema cudatool.addr/1)");
  add_names_option(cmd, o->names);
  cmd->footer(
      "Without --base an ADDR is an address of the library's own address space (what readelf,\n"
      "objdump and `cudatool functions` show). The function is the FDE of .eh_frame holding\n"
      "the address; its name is the exported symbol starting there, else fn_<start>.\n"
      "Exit status: 0 every address lies in a function, 1 some do not, 2 bad input.\n"
      "Examples:\n"
      "  cudatool addr LIB 0x2a3b40 0x5b27c8\n"
      "  grep libcuda /proc/$PID/maps | head -1        # 7f3a1c000000-… r--p 00000000 … libcuda…\n"
      "  cudatool addr LIB --base 0x7f3a1c000000 0x7f3a1c2a3b47\n"
      "  cudatool addr LIB +0x2a3b47                     # from \"libcuda.so.1(+0x2a3b47)\"");
  cmd->callback([o, exit_code] { *exit_code = run_addr(*o); });
}

}  // namespace cudatool::cli
