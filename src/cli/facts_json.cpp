#include "cli/facts_json.hpp"

namespace cudatool::cli {
namespace {

void strings(JsonWriter& w, std::string_view key, const std::vector<std::string>& v) {
  w.key(key).begin_array();
  for (const auto& s : v) w.value(s);
  w.end_array();
}

void ints(JsonWriter& w, std::string_view key, const std::vector<int64_t>& v) {
  w.key(key).begin_array();
  for (auto x : v) w.value(x);
  w.end_array();
}

void groups(JsonWriter& w, std::string_view key, const std::vector<ApiGroup>& g) {
  w.key(key).begin_array();
  for (const auto& x : g) {
    w.begin_object().kv("base", x.base);
    strings(w, "names", x.names);
    w.end_object();
  }
  w.end_array();
}

void changes(JsonWriter& w, std::string_view key, const std::vector<RowChange>& v) {
  w.key(key).begin_array();
  for (const auto& c : v)
    w.begin_object().kv("key", c.key).kv("old", c.old_value).kv("new", c.new_value).end_object();
  w.end_array();
}

void opt(JsonWriter& w, std::string_view key, const std::optional<std::string>& v) {
  if (v)
    w.kv(key, *v);
  else
    w.key(key).null();
}

void note(JsonWriter& w, std::string_view key, const NoteFacts& n) {
  w.key(key).begin_object().kv("status", n.status);
  if (n.format)
    w.kv("format", *n.format);
  else
    w.key("format").null();
  opt(w, "cuda_version", n.cuda_version);
  ints(w, "driver_branches", n.driver_branches);
  ints(w, "device_generations", n.device_generations);
  w.end_object();
}

// "functions": counts and the largest movers.
void delta_functions_json(JsonWriter& w, const FunctionDelta& f) {
  w.key("functions").begin_object();
  w.kv("old", f.old_count)
      .kv("new", f.new_count)
      .kv("unchanged", f.unchanged)
      .kv("changed", f.changed);
  w.kv("added", f.added).kv("removed", f.removed);
  w.key("largest_movers").begin_array();
  for (const auto& m : f.largest_movers) {
    w.begin_object()
        .kv("name", m.name)
        .kv("old_size", m.old_size)
        .kv("new_size", m.new_size)
        .end_object();
  }
  w.end_array().end_object();
}

// "cubins": architectures, image counts, kernel families and kernels.
void delta_cubins_json(JsonWriter& w, const CubinDelta& c) {
  w.key("cubins").begin_object();
  strings(w, "archs_added", c.archs_added);
  strings(w, "archs_removed", c.archs_removed);
  w.key("images_per_arch").begin_array();
  for (const auto& [arch, p] : c.images_per_arch) {
    w.begin_object().kv("arch", arch).kv("old", p.first).kv("new", p.second).end_object();
  }
  w.end_array();
  strings(w, "families_added", c.families_added);
  strings(w, "families_removed", c.families_removed);
  for (auto [key, m] : {std::pair{"kernels_added", &c.kernels_added},
                        std::pair{"kernels_removed", &c.kernels_removed}}) {
    w.key(key).begin_array();
    for (const auto& [fam, ks] : *m) {
      w.begin_object().kv("family", fam);
      strings(w, "kernels", ks);
      w.end_object();
    }
    w.end_array();
  }
  w.end_object();
}

// "tables": the driver's tables.
void delta_tables_json(JsonWriter& w, const TableDelta& t) {
  w.key("tables").begin_object();
  strings(w, "procaddress_added", t.procaddress_added);
  strings(w, "procaddress_removed", t.procaddress_removed);
  changes(w, "procaddress_changed", t.procaddress_changed);
  strings(w, "export_tables_added", t.export_tables_added);
  strings(w, "export_tables_removed", t.export_tables_removed);
  changes(w, "export_tables_changed", t.export_tables_changed);
  strings(w, "errors_added", t.errors_added);
  strings(w, "errors_removed", t.errors_removed);
  changes(w, "errors_changed", t.errors_changed);
  w.end_object();
}

}  // namespace

void write_delta_json(JsonWriter& w, const Delta& d,
                      const std::function<void(JsonWriter&)>& extra) {
  w.begin_object().kv("schema", "cudatool.delta/1");
  w.key("old").begin_object().kv("path", d.old_path);
  opt(w, "driver_version", d.old_version);
  opt(w, "build_id", d.old_build_id);
  w.end_object();
  w.key("new").begin_object().kv("path", d.new_path);
  opt(w, "driver_version", d.new_version);
  opt(w, "build_id", d.new_build_id);
  w.end_object();
  w.kv("same_build", d.same_build).kv("interface_unchanged", d.interface_unchanged());
  w.key("note").begin_object().kv("changed", d.note_changed);
  note(w, "old", d.old_note);
  note(w, "new", d.new_note);
  ints(w, "branches_added", d.branches_added);
  ints(w, "branches_removed", d.branches_removed);
  ints(w, "devices_added", d.devices_added);
  ints(w, "devices_removed", d.devices_removed);
  w.end_object();
  w.key("exports").begin_object();
  strings(w, "added", d.exports_added);
  strings(w, "removed", d.exports_removed);
  groups(w, "apis_added", d.apis_added);
  groups(w, "apis_removed", d.apis_removed);
  groups(w, "new_api_versions", d.new_api_versions);
  groups(w, "new_variants", d.new_variants);
  groups(w, "removed_api_versions", d.removed_api_versions);
  groups(w, "removed_variants", d.removed_variants);
  strings(w, "objects_added", d.objects_added);
  strings(w, "objects_removed", d.objects_removed);
  w.end_object();
  w.key("imports").begin_object();
  for (auto [key, list] :
       {std::pair{"added", &d.imports_added}, std::pair{"removed", &d.imports_removed}}) {
    w.key(key).begin_array();
    for (const auto& i : *list) {
      w.begin_object().kv("name", i.name);
      w.kv_or_null("version", i.version);
      w.kv_or_null("library", i.library);
      w.end_object();
    }
    w.end_array();
  }
  strings(w, "versions_required_added", d.versions_required_added);
  strings(w, "versions_required_removed", d.versions_required_removed);
  w.end_object();
  w.key("sizes").begin_array();
  for (const auto& s : d.sizes) {
    w.begin_object()
        .kv("what", s.what)
        .kv("old", s.old_value)
        .kv("new", s.new_value)
        .kv("change", s.diff())
        .end_object();
  }
  w.end_array();
  if (d.functions)
    delta_functions_json(w, *d.functions);
  else
    w.key("functions").null();
  if (d.cubins)
    delta_cubins_json(w, *d.cubins);
  else
    w.key("cubins").null();
  if (d.tables)
    delta_tables_json(w, *d.tables);
  else
    w.key("tables").null();
  if (extra) extra(w);
  w.end_object();
}

void write_history_json(JsonWriter& w, const History& h,
                        const std::function<void(JsonWriter&)>& extra) {
  w.begin_object().kv("schema", "cudatool.history/1");
  w.key("builds").begin_array();
  for (const BuildFacts* f : h.builds) {
    w.begin_object().kv("label", build_label(*f)).kv("path", f->path);
    opt(w, "driver_version", f->driver_version);
    opt(w, "build_id", f->build_id);
    w.kv("file_size", f->file_size)
        .kv("exports", f->exports.size())
        .kv("imports", f->imports.size());
    note(w, "note", f->note);
    if (f->functions)
      w.kv("functions", f->functions->count);
    else
      w.key("functions").null();
    if (f->cubins) {
      w.key("cubins").begin_object().kv("images", f->cubins->images).kv("bytes", f->cubins->bytes);
      w.key("per_arch").begin_object();
      for (const auto& [arch, n] : f->cubins->images_per_arch) w.kv(arch, n);
      w.end_object().end_object();
    } else {
      w.key("cubins").null();
    }
    if (f->tables) {
      w.kv("procaddress_rows", f->tables->procaddress.size())
          .kv("export_tables", f->tables->export_tables.size());
      w.kv("error_codes", f->tables->errors.size());
    } else {
      w.key("procaddress_rows").null().key("export_tables").null().key("error_codes").null();
    }
    w.key("sections").begin_object();
    for (const char* s : {".text", ".rodata", ".data.rel.ro", ".eh_frame"}) {
      auto it = f->section_sizes.find(s);
      if (it != f->section_sizes.end())
        w.kv(s, it->second);
      else
        w.key(s).null();
    }
    w.end_object();
    w.end_object();
  }
  w.end_array();
  w.key("export_since").begin_object();
  for (const auto& [name, v] : h.export_since) w.kv(name, v);
  w.end_object();
  w.key("api_since").begin_object();
  for (const auto& [name, v] : h.api_since) w.kv(name, v);
  w.end_object();
  w.key("data_since").begin_object();
  for (const auto& [name, v] : h.data_since) w.kv(name, v);
  w.end_object();
  if (extra) extra(w);
  w.end_object();
}

}  // namespace cudatool::cli
