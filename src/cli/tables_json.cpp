// cudatool tables --json: schema cudatool.tables/1 (docs/json.md).
#include <fmt/format.h>

#include "base/json_writer.hpp"
#include "cli/json_diagnostics.hpp"
#include "cli/tables_render.hpp"

namespace cudatool::cli {
namespace {

void str_or_null(JsonWriter& w, std::string_view k, std::string_view v) {
  if (v.empty())
    w.key(k).null();
  else
    w.kv(k, v);
}
void hex_or_null(JsonWriter& w, std::string_view k, uint64_t v) {
  if (v == 0)
    w.key(k).null();
  else
    w.kv_hex(k, v);
}

void procaddress_json(JsonWriter& w, DriverTables& t) {
  const auto& pa = t.procaddress();
  w.key("procaddress").begin_object();
  w.kv("found", pa.found);
  hex_or_null(w, "address", pa.vaddr);
  str_or_null(w, "section", pa.section);
  w.kv("evidence", pa.evidence);
  w.kv("record_count", pa.records.size()).kv("row_count", pa.rows.size());
  uint64_t n[3] = {0, 0, 0};
  for (const auto& r : pa.rows) ++n[static_cast<int>(r.flags)];
  w.key("rows_by_flags").begin_object();
  w.kv("default", n[0]).kv("legacy", n[1]).kv("per_thread", n[2]);
  w.end_object();
  w.key("records").begin_array();
  for (const auto& r : pa.records) {
    w.begin_object();
    w.kv("api", r.api).kv_hex("address", r.vaddr);
    w.kv_hex("legacy_list", r.legacy_list).kv_hex("per_thread_list", r.per_thread_list);
    w.kv("legacy_count", r.legacy_count).kv("per_thread_count", r.per_thread_count);
    w.end_object();
  }
  w.end_array();
  w.key("rows").begin_array();
  for (const auto& r : pa.rows) {
    w.begin_object();
    w.kv("api", r.api).kv("cuda_version", r.cuda_version).kv("flags", proc_flags_name(r.flags));
    hex_or_null(w, "function", r.function);
    str_or_null(w, "export", r.export_name);
    w.kv_hex("entry", r.entry_vaddr).kv("record", r.record);
    w.end_object();
  }
  w.end_array();
  const auto& cov = t.coverage();
  uint64_t covered = 0;
  for (const auto& c : cov) covered += c.in_procaddress;
  w.key("exported_functions").begin_object();
  w.kv("total", cov.size()).kv("in_procaddress", covered);
  w.key("not_in_procaddress").begin_array();
  for (const auto& c : cov) {
    if (c.in_procaddress) continue;
    w.begin_object().kv("name", c.name).kv_hex("address", c.address).kv("reason", c.reason);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  w.end_object();
}

void exporttables_json(JsonWriter& w, DriverTables& t) {
  const auto& et = t.export_tables();
  w.key("exporttables").begin_object();
  w.kv("found", et.found);
  hex_or_null(w, "address", et.vaddr);
  str_or_null(w, "section", et.section);
  w.kv("zero_terminated", et.zero_terminated).kv("evidence", et.evidence);
  w.kv("count", et.tables.size()).kv("known_count", et.known_count);
  w.key("tables").begin_array();
  for (const auto& x : et.tables) {
    w.begin_object();
    w.kv("index", x.index).kv("uuid", cuda::format_uuid(x.uuid));
    w.key("bytes").hex_bytes(x.uuid.data(), x.uuid.size());
    w.kv_hex("entry", x.entry_vaddr).kv_hex("uuid_address", x.uuid_vaddr);
    w.kv_hex("address", x.table_vaddr);
    str_or_null(w, "section", x.section);
    if (x.declared_size)
      w.kv("declared_size", *x.declared_size);
    else
      w.key("declared_size").null();
    w.kv("slot_count", x.slot_count).kv("truncated", x.truncated);
    if (x.known) {
      w.kv("name", x.known->name).kv("named_by", x.known->source);
    } else {
      w.key("name").null();
      w.key("named_by").null();
    }
    w.key("slots").begin_array();
    for (const auto& s : x.slots) {
      w.begin_object();
      w.kv("index", s.index).kv("kind", slot_kind_name(s.kind)).kv_hex("address", s.vaddr);
      if (s.kind == cuda::SlotKind::kSize || s.kind == cuda::SlotKind::kValue ||
          s.kind == cuda::SlotKind::kNull) {
        w.kv_hex("value", s.value);
        w.key("target").null();
      } else {
        w.key("value").null();
        w.kv_hex("target", s.value);
      }
      str_or_null(w, "section", s.target_section);
      str_or_null(w, "export", s.export_name);
      str_or_null(w, "name", s.known_name);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

void dispatch_json(JsonWriter& w, DriverTables& t) {
  const auto& d = t.dispatch();
  w.key("dispatch").begin_object();
  w.key("slot_table");
  if (d.slot_lo <= d.slot_hi && d.slot_hi != 0) {
    w.begin_object();
    str_or_null(w, "section", d.slot_section);
    w.kv_hex("first", d.slot_lo).kv_hex("last", d.slot_hi);
    w.kv("relocated_slots", d.relocated_slots_in_range);
    w.end_object();
  } else {
    w.null();
  }
  w.kv("instructions_decoded", d.instructions);
  uint64_t n[4] = {0, 0, 0, 0};
  for (const auto& e : d.entries) ++n[static_cast<int>(e.kind)];
  w.key("counts").begin_object();
  w.kv("slot_jump", n[0]).kv("slot_call", n[1]).kv("constant", n[2]).kv("other", n[3]);
  w.end_object();
  w.key("entries").begin_array();
  for (const auto& e : d.entries) {
    w.begin_object();
    w.kv("export", e.export_name)
        .kv_hex("wrapper", e.wrapper)
        .kv("kind", wrapper_kind_name(e.kind));
    hex_or_null(w, "slot", e.slot);
    hex_or_null(w, "implementation", e.implementation);
    str_or_null(w, "implementation_section", e.implementation_section);
    if (e.guard_vaddr) {
      w.kv_hex("guard", *e.guard_vaddr).kv_hex("guard_value", e.guard_value.value_or(0));
    } else {
      w.key("guard").null();
      w.key("guard_value").null();
    }
    if (e.constant)
      w.kv("constant", *e.constant);
    else
      w.key("constant").null();
    w.kv("hops", e.hops);
    str_or_null(w, "note", e.note);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

void errors_json(JsonWriter& w, DriverTables& t) {
  const auto& e = t.errors();
  w.key("errors").begin_object();
  w.kv("found", e.found);
  hex_or_null(w, "address", e.vaddr);
  str_or_null(w, "section", e.section);
  w.kv("evidence", e.evidence).kv("count", e.entries.size());
  w.key("entries").begin_array();
  for (const auto& x : e.entries) {
    w.begin_object();
    w.kv("code", x.code).kv("name", x.name).kv("description", x.description);
    w.kv_hex("address", x.vaddr);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

}  // namespace

std::string render_tables_json(DriverImage& img, DriverTables& t, const TablesOptions& o) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.kv("schema", "cudatool.tables/1").kv("file", img.path());
  w.key("relocations").begin_object();
  w.kv("walked", t.relocations_walked());
  w.end_object();
  if (o.want("procaddress")) procaddress_json(w, t);
  if (o.want("exporttables")) exporttables_json(w, t);
  if (o.want("dispatch")) dispatch_json(w, t);
  if (o.want("errors")) errors_json(w, t);
  write_diagnostics(w, img.diagnostics());
  w.end_object();
  w.finish();
  return out;
}

}  // namespace cudatool::cli
