// cudatool tables LIB: libcuda's routing tables (cuGetProcAddress, cuGetExportTable, wrapper
// dispatch, CUresult strings), recovered from the file.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/tables_render.hpp"

namespace cudatool::cli {
namespace {

std::string or_dash(std::string_view s) {
  return s.empty() ? std::string("-") : std::string(s);
}
std::string hex_or_dash(uint64_t v) {
  return v == 0 ? std::string("-") : hex(v);
}

void procaddress_text(std::string& out, DriverTables& t) {
  const auto& pa = t.procaddress();
  out += "cuGetProcAddress table\n";
  if (!pa.found) {
    out += fmt::format("  {}\n\n", pa.evidence);
    return;
  }
  uint64_t n[3] = {0, 0, 0};
  for (const auto& r : pa.rows) ++n[static_cast<int>(r.flags)];
  out +=
      fmt::format("  {} at {}: {} API names, {} rows ({} default, {} legacy, {} per-thread)\n",
                  pa.section, hex(pa.vaddr), pa.records.size(), pa.rows.size(), n[0], n[1], n[2]);
  out += fmt::format("  found as the {}\n", pa.evidence);
  std::vector<const cuda::ProcAddressRow*> rows;
  for (const auto& r : pa.rows) rows.push_back(&r);
  std::stable_sort(rows.begin(), rows.end(), [](const auto* a, const auto* b) {
    return a->api != b->api ? a->api < b->api : a->cuda_version > b->cuda_version;
  });
  TextTable tt({"api", "version", "flags", "function", "export"}, {false, true, false, true});
  for (const auto* r : rows) {
    tt.add({std::string(r->api), fmt::format("{}", r->cuda_version),
            std::string(proc_flags_name(r->flags)), hex_or_dash(r->function),
            or_dash(r->export_name)});
  }
  out += tt.render("  ");
  const auto& cov = t.coverage();
  uint64_t covered = 0;
  for (const auto& c : cov) covered += c.in_procaddress;
  out += fmt::format("  exported cu* functions: {}; {} returned by a row, {} not:\n", cov.size(),
                     covered, cov.size() - covered);
  TextTable nt({"export", "address", "why not"}, {false, true, false});
  for (const auto& c : cov)
    if (!c.in_procaddress) nt.add({std::string(c.name), hex(c.address), c.reason});
  out += nt.render("    ");
  out += "\n";
}

void exporttables_text(std::string& out, DriverTables& t, bool slots) {
  const auto& et = t.export_tables();
  out += "cuGetExportTable tables\n";
  if (!et.found) {
    out += fmt::format("  {}\n\n", et.evidence);
    return;
  }
  out += fmt::format("  UUID array in {} at {}: {} tables, {} named by the community{}\n",
                     et.section, hex(et.vaddr), et.tables.size(), et.known_count,
                     et.zero_terminated ? "; ends with a {0, 0} pair" : "");
  TextTable tt({"#", "uuid", "table", "section", "size", "slots", "name"},
               {true, false, true, false, true, true, false});
  for (const auto& x : et.tables) {
    tt.add(
        {fmt::format("{}", x.index), cuda::format_uuid(x.uuid), hex(x.table_vaddr),
         or_dash(x.section),
         x.declared_size ? hex(*x.declared_size) + (x.truncated ? "!" : "") : std::string("none"),
         fmt::format("{}", x.slot_count), x.known ? std::string(x.known->name) : "-"});
  }
  out += tt.render("  ");
  if (slots) {
    for (const auto& x : et.tables) {
      std::string bytes;
      for (uint8_t b : x.uuid) bytes += fmt::format("{}{:02x}", bytes.empty() ? "" : " ", b);
      out += fmt::format("\n  {} {} (bytes {})\n", cuda::format_uuid(x.uuid),
                         x.known ? std::string(x.known->name) : std::string("-"), bytes);
      TextTable st({"slot", "kind", "value", "section", "name"}, {true, false, true, false, false});
      for (const auto& s : x.slots) {
        std::string name = !s.known_name.empty() ? std::string(s.known_name) : "";
        if (!s.export_name.empty())
          name += (name.empty() ? "" : " ") + std::string("= export ") + std::string(s.export_name);
        st.add({fmt::format("{}", s.index), std::string(slot_kind_name(s.kind)), hex(s.value),
                or_dash(s.target_section), or_dash(name)});
      }
      out += st.render("    ");
    }
  }
  out += "\n";
}

void dispatch_text(std::string& out, DriverTables& t) {
  const auto& d = t.dispatch();
  uint64_t n[4] = {0, 0, 0, 0};
  for (const auto& e : d.entries) ++n[static_cast<int>(e.kind)];
  out += "dispatch: exported functions -> implementations\n";
  out += fmt::format(
      "  {} exported functions: {} jump through a slot, {} call through one, {} return a "
      "constant, {} other\n",
      d.entries.size(), n[0], n[1], n[2], n[3]);
  if (d.slot_hi != 0) {
    out += fmt::format("  slots used: {} {}..{} ({} relocated slots in that range)\n",
                       d.slot_section, hex(d.slot_lo), hex(d.slot_hi), d.relocated_slots_in_range);
  }
  TextTable tt({"export", "wrapper", "kind", "slot", "implementation", "note"},
               {false, true, false, true, true, false});
  std::vector<const cuda::DispatchEntry*> sorted;
  for (const auto& e : d.entries) sorted.push_back(&e);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto* a, const auto* b) { return a->export_name < b->export_name; });
  for (const auto* ep : sorted) {
    const auto& e = *ep;
    std::string note = e.note;
    if (e.constant) note = fmt::format("returns {}", *e.constant);
    if (e.hops > 0) note += fmt::format("{}{} hop(s)", note.empty() ? "" : "; ", e.hops);
    tt.add({std::string(e.export_name), hex(e.wrapper), std::string(wrapper_kind_name(e.kind)),
            hex_or_dash(e.slot), hex_or_dash(e.implementation), or_dash(note)});
  }
  out += tt.render("  ");
  out += "\n";
}

void errors_text(std::string& out, DriverTables& t) {
  const auto& e = t.errors();
  out += "CUresult table\n";
  if (!e.found) {
    out += fmt::format("  {}\n\n", e.evidence);
    return;
  }
  out += fmt::format("  {} at {}: {} codes\n", e.section, hex(e.vaddr), e.entries.size());
  TextTable tt({"code", "name", "description"}, {true, false, false});
  for (const auto& x : e.entries)
    tt.add({fmt::format("{}", x.code), std::string(x.name), std::string(x.description)});
  out += tt.render("  ");
  out += "\n";
}

int run_tables(const TablesOptions& o) {
  auto img = open_library(o.lib);
  if (!img) return kExitBadInput;
  auto& t = img->facet<DriverTables>();
  bool missing = (o.want("procaddress") && !t.procaddress().found) ||
                 (o.want("exporttables") && !t.export_tables().found) ||
                 (o.want("errors") && !t.errors().found);
  if (o.json) {
    emit(render_tables_json(*img, t, o));
  } else {
    std::string out =
        fmt::format("{}: {} dynamic relocations walked\n\n", img->path(), t.relocations_walked());
    if (o.want("procaddress")) procaddress_text(out, t);
    if (o.want("exporttables")) exporttables_text(out, t, !o.no_slots);
    if (o.want("dispatch")) dispatch_text(out, t);
    if (o.want("errors")) errors_text(out, t);
    emit(out);
  }
  int rc = report_diagnostics(img->diagnostics());
  if (rc != kExitOk) return rc;
  return missing ? kExitFindings : kExitOk;
}

}  // namespace

void register_tables(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<TablesOptions>();
  auto* cmd = app.add_subcommand(
      "tables",
      "libcuda's routing tables: cuGetProcAddress rows, cuGetExportTable UUID tables, wrapper "
      "dispatch, CUresult strings");
  cmd->add_option("LIB", o->lib, "libcuda build (default: the system's libcuda.so.1)");
  cmd->add_flag("--json", o->json, "print JSON (schema cudatool.tables/1)");
  cmd->add_option("--kind", o->kinds,
                  "only these tables (repeat or comma-separate): procaddress, exporttables, "
                  "dispatch, errors")
      ->allow_extra_args(false)
      ->delimiter(',')
      ->check(CLI::IsMember({"procaddress", "exporttables", "dispatch", "errors"}));
  cmd->add_flag("--no-slots", o->no_slots,
                "text output: list export tables without each table's slots");
  cmd->footer(
      "Recovered from the file alone, for any driver version: the tables are found from the\n"
      "dynamic relocations (arrays of pointers in .data.rel.ro), the wrapper -> slot step by\n"
      "disassembling each exported stub. docs/tables.md describes each table per driver branch.\n"
      "  procaddress   every cuGetProcAddress row: API name, CUDA version it applies from,\n"
      "                flags (default / legacy / per-thread stream), function returned; and\n"
      "                every exported cu* function that no row returns, with the reason\n"
      "  exporttables  every cuGetExportTable UUID (8-4-4-4-12, memory byte order, and raw\n"
      "                bytes), table address, size word, slots; community names (ZLUDA)\n"
      "  dispatch      exported wrapper -> slot -> implementation\n"
      "  errors        CUresult code, CUDA_ERROR_* name, description\n"
      "Examples:\n"
      "  cudatool tables LIB --kind procaddress | grep -w cuMemAlloc\n"
      "  cudatool tables LIB --kind exporttables --no-slots\n"
      "  cudatool tables LIB --json | jq '.dispatch.entries[] | "
      "select(.export==\"cuCtxCreate_v2\")'\n"
      "  cudatool tables LIB --json --kind errors | jq -r '.errors.entries[] | \"\\(.code) "
      "\\(.name)\"'\n"
      "Exit status: 0 every requested table found; 1 a requested table was not found;\n"
      "2 bad input (damage is listed on stderr and in \"diagnostics\").");
  cmd->callback([o, exit_code] { *exit_code = run_tables(*o); });
}

}  // namespace cudatool::cli
