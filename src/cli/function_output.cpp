#include "cli/function_output.hpp"

#include <CLI/CLI.hpp>

#include "analysis/driver_image.hpp"
#include "analysis/function_names.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "cli/common.hpp"

namespace cudatool::cli {

void add_names_option(CLI::App* cmd, NameOptions& o) {
  cmd->add_option("--names", o.names,
                  "which names to attach: all (exports; the implementations, procaddress-only "
                  "functions and export-table slots that the driver tables give; and .symtab's "
                  "functions where the file has one, as nm names them) or exports")
      ->check(CLI::IsMember({"all", "exports"}))
      ->capture_default_str();
}

const FunctionMap& named_function_map(DriverImage& img, const NameOptions& o) {
  // The names decode, ab and stacks give too (function_names.hpp).
  if (o.names == "all") return function_map_with_names(img);
  return img.facet<FunctionMap>();
}

void write_function_json(JsonWriter& w, const FunctionMap& map, const Function& f) {
  w.begin_object();
  w.kv_hex("start", f.start).kv_hex("end", f.end()).kv("size", f.size);
  std::string_view sec = map.exec_section(f.start);
  w.kv_or_null("section", sec);
  w.kv("name", map.display_name(f));
  w.key("names").begin_array();
  for (const auto& n : map.names(f)) {
    w.begin_object().kv("name", n.name).kv("source", n.source).end_object();
  }
  w.end_array();
  w.kv_hex("fde", f.fde).kv("in_hdr_table", f.in_hdr_table).kv("has_lsda", f.has_lsda);
  w.end_object();
}

Coverage coverage(const FunctionMap& map, const std::vector<Gap>& gaps) {
  Coverage c;
  for (const auto& r : map.exec_ranges()) c.exec_bytes += r.end - r.start;
  for (const auto& g : gaps) {
    ++c.gaps;
    c.gap_bytes += g.size();
    switch (g.kind) {
      case Gap::Kind::kPadding:
        ++c.padding_gaps;
        break;
      case Gap::Kind::kCode:
        ++c.code_gaps;
        break;
      case Gap::Kind::kNoBytes:
        ++c.no_byte_gaps;
        break;
    }
  }
  return c;
}

void write_map_sources_json(JsonWriter& w, const FunctionMap& map) {
  const auto& eh = map.eh_frame();
  if (map.has_eh_frame()) {
    w.key("eh_frame").begin_object();
    w.kv("source", map.eh_frame_source()).kv_hex("address", eh.vaddr());
    w.kv_hex("offset", eh.bytes().base()).kv("size", eh.bytes().size());
    w.kv("cies", eh.cies().size()).kv("fdes", eh.fde_count());
    w.kv("zero_terminators", eh.terminators().size()).kv("damaged_records", eh.damaged());
    w.kv("skipped_bytes", eh.skipped_bytes());
    w.end_object();
  } else {
    w.key("eh_frame").null();
  }
  const auto& h = map.hdr_check();
  if (h.present) {
    w.key("eh_frame_hdr").begin_object();
    if (h.fde_count)
      w.kv("fde_count", *h.fde_count);
    else
      w.key("fde_count").null();
    w.kv_hex("eh_frame_ptr", h.eh_frame_ptr).kv("has_table", h.has_table);
    w.kv("table_entries", h.entries).kv("agrees", h.agrees());
    w.kv("disagreement_count", h.disagreement_count);
    w.key("disagreements").begin_array();
    for (const auto& d : h.disagreements) w.value(d.message());
    w.end_array();
    w.end_object();
  } else {
    w.key("eh_frame_hdr").null();
  }
}

int warn_damaged_function_map(const FunctionMap& map) {
  const HdrCheck& h = map.hdr_check();
  if (h.disagreement_count == 0) return kExitOk;
  std::fprintf(stderr,
               "cudatool: warning: the function map may be damaged: .eh_frame_hdr's search table "
               "disagrees with .eh_frame in %llu places (`cudatool functions` lists them); "
               "references are attributed to the %zu functions .eh_frame describes\n",
               static_cast<unsigned long long>(h.disagreement_count), map.functions().size());
  return kExitBadInput;
}

std::string map_summary_text(const FunctionMap& map) {
  std::string out;
  const auto& eh = map.eh_frame();
  if (map.has_eh_frame()) {
    out += fmt::format("unwind data   {} at {:#x}: {} CIEs, {} FDEs", map.eh_frame_source(),
                       eh.vaddr(), eh.cies().size(), eh.fde_count());
    if (eh.damaged() > 0) out += fmt::format(", {} damaged records", eh.damaged());
    if (eh.skipped_bytes() > 0) out += fmt::format(", {} bytes unreadable", eh.skipped_bytes());
    out += "\n";
  } else {
    out += "unwind data   none (no .eh_frame)\n";
  }
  const auto& h = map.hdr_check();
  if (!h.present) {
    out += "search table  none (no .eh_frame_hdr)\n";
  } else if (!h.has_table) {
    out += "search table  .eh_frame_hdr has no table\n";
  } else if (h.agrees()) {
    out += fmt::format("search table  .eh_frame_hdr lists {} FDEs and agrees with .eh_frame\n",
                       h.entries);
  } else {
    out += fmt::format(
        "search table  .eh_frame_hdr lists {} FDEs and DISAGREES with .eh_frame "
        "in {} places:\n",
        h.entries, h.disagreement_count);
    for (const auto& d : h.disagreements) out += fmt::format("                {}\n", d.message());
    if (h.disagreement_count > h.disagreements.size()) {
      out += fmt::format("                … and {} more\n",
                         h.disagreement_count - h.disagreements.size());
    }
  }
  return out;
}

}  // namespace cudatool::cli
