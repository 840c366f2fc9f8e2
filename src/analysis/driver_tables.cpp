#include "analysis/driver_tables.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <exception>
#include <latch>
#include <optional>
#include <system_error>
#include <unordered_map>

#include "analysis/relocations.hpp"
#include "base/helper_thread.hpp"
#include "base/permute.hpp"
#include "base/prefault.hpp"

namespace cudatool {
namespace {

bool is_function(const elf::Symbol& s) {
  return s.type() == STT_FUNC || s.type() == STT_GNU_IFUNC;
}

bool is_function(const Export& e) {
  return is_function(e.sym);
}

// The exported functions, straight from the dynamic symbols (as exports() selects them).
bool is_exported_function(const elf::Symbol& s) {
  return DriverImage::is_export(s) && is_function(s);
}

}  // namespace

DriverTables::DriverTables(DriverImage& img) : img_(img) {}

cuda::TableInput DriverTables::input() {
  auto& rel = img_.facet<Relocations>();
  if (!names_ready_) {
    for (const auto& s : img_.dynamic_symbols())
      if (is_exported_function(s)) names_.add(s.st_value, s.name);
    names_.finish();
    names_ready_ = true;
  }
  return {&rel.sections(), &rel.index(), &names_, &img_.diagnostics()};
}

const cuda::ProcAddressTable& DriverTables::procaddress() {
  if (!procaddress_) procaddress_ = cuda::find_procaddress_table(input());
  return *procaddress_;
}

const cuda::ExportTables& DriverTables::export_tables() {
  if (!export_tables_) export_tables_ = cuda::find_export_tables(input());
  return *export_tables_;
}

const cuda::ErrorTable& DriverTables::errors() {
  if (!errors_) errors_ = cuda::find_error_table(input());
  return *errors_;
}

std::vector<cuda::ExportedFunction> DriverTables::exported_code(const cuda::TableInput& in) {
  std::vector<cuda::ExportedFunction> fns;
  for (const auto& sym : img_.dynamic_symbols()) {
    if (!is_exported_function(sym)) continue;
    const auto* s = in.sections->at(sym.st_value);
    if (s == nullptr || !s->exec) continue;
    fns.push_back({sym.st_value, sym.name});
  }
  return fns;
}

const cuda::DispatchMap& DriverTables::dispatch() {
  if (!dispatch_) {
    auto in = input();
    dispatch_ = cuda::resolve_dispatch(in, exported_code(in));
  }
  return *dispatch_;
}

void DriverTables::build_name_tables(const std::function<void()>& alongside) {
  if (dispatch_ || procaddress_ || export_tables_) {
    if (alongside) alongside();
    dispatch();
    procaddress();
    export_tables();
    return;
  }
  // Each table reports to its own diagnostics, appended in the order of the calls above.
  Diagnostics dispatch_diag, procaddress_diag, export_diag;
  cuda::TableInput in;
  std::vector<cuda::ExportedFunction> fns;
  std::optional<cuda::DispatchResolver> stubs;
  std::latch input_ready(1);
  std::exception_ptr helper_failed;
  // The two tables, each by whichever thread comes for it first, then the stubs, shared in
  // batches. The longer table goes first to the thread that is free first: this one, after the
  // relocation index, takes the export tables (550: ~0.7 ms, the cuGetProcAddress table ~0.25
  // ms) while the helper still reads FDEs; the helper then takes the cuGetProcAddress table if
  // this thread has not come to it yet, and both share the stubs, so that they finish together.
  // The other way round, this thread ran out of stubs ~0.25 ms before the helper finished the
  // export tables, and waited. Each table's name list is made by the thread that read it
  // (names_made_ is written by the export tables' thread only).
  std::atomic<bool> procaddress_claimed{false}, export_claimed{false};
  auto procaddress_if_unclaimed = [&] {
    if (procaddress_claimed.exchange(true, std::memory_order_relaxed)) return;
    cuda::TableInput pa_in = in;
    pa_in.diag = &procaddress_diag;
    procaddress_ = cuda::find_procaddress_table(pa_in);
    procaddress_names_ = procaddress_names(/*with_sources=*/false);
  };
  auto export_tables_if_unclaimed = [&] {
    if (export_claimed.exchange(true, std::memory_order_relaxed)) return;
    cuda::TableInput et_in = in;
    et_in.diag = &export_diag;
    export_tables_ = cuda::find_export_tables(et_in);
    export_table_names_ = export_table_names(/*with_sources=*/false);
  };
  // The helper: `alongside`, then what is left of the two tables and the stubs.
  auto helper_work = [&] {
    try {
      if (alongside) alongside();
      input_ready.wait();
      if (!stubs) return;
      procaddress_if_unclaimed();
      export_tables_if_unclaimed();
      stubs->resolve_some();
    } catch (...) {
      helper_failed = std::current_exception();
    }
  };
  {
    std::optional<HelperThread> helper;  // joined on leaving the block, by an exception too
    try {
      // With one CPU the two would only take turns: the helper's work is then done here, after
      // ours (as when no thread can be had).
      if (HelperThread::another_cpu()) helper.emplace(helper_work);
    } catch (const std::system_error&) {
    }
    if (!helper) input_ready.count_down();
    try {
      in = input();  // the relocation index and the export names, read by both threads
      fns = exported_code(in);
      cuda::TableInput dispatch_in = in;
      dispatch_in.diag = &dispatch_diag;
      stubs.emplace(dispatch_in, fns);
    } catch (...) {
      if (helper) input_ready.count_down();
      throw;
    }
    if (helper) input_ready.count_down();
    // From here on, what `in` points to no longer changes. A throw below joins the helper on
    // the way out.
    if (helper) {
      export_tables_if_unclaimed();
      procaddress_if_unclaimed();
      stubs->resolve_some();
    } else {
      stubs->resolve_some();
      helper_work();
    }
  }
  if (helper_failed) std::rethrow_exception(helper_failed);
  dispatch_ = stubs->finish();
  for (const Diagnostics* d : {&dispatch_diag, &procaddress_diag, &export_diag})
    img_.diagnostics().insert(img_.diagnostics().items().size(), *d);
}

uint64_t DriverTables::relocations_walked() {
  return img_.facet<Relocations>().index().walked();
}

const std::vector<DriverTables::ApiCoverage>& DriverTables::coverage() {
  if (coverage_) return *coverage_;
  coverage_.emplace();
  const auto& pa = procaddress();
  const auto& dm = dispatch();
  const auto& et = errors();
  std::unordered_map<uint64_t, const cuda::ProcAddressRow*> row_for;
  for (const auto& r : pa.rows)
    if (r.function != 0) row_for.emplace(r.function, &r);
  std::unordered_map<std::string_view, const cuda::DispatchEntry*> wrapper;
  for (const auto& d : dm.entries) wrapper.emplace(d.export_name, &d);
  for (const auto& e : img_.exports()) {
    if (!is_function(e) || e.sym.name.substr(0, 2) != "cu") continue;
    ApiCoverage c;
    c.name = e.sym.name;
    c.address = e.sym.st_value;
    if (auto it = row_for.find(c.address); it != row_for.end()) {
      c.in_procaddress = true;
      c.via = fmt::format("{} v{} {}", it->second->api, it->second->cuda_version,
                          cuda::proc_flags_name(it->second->flags));
    } else if (!e.api.is_driver_api) {
      c.reason = e.sym.name.substr(0, 5) == "cudbg"
                     ? "debugger interface (cudbg*), not a driver API entry point"
                     : "not a cu<Upper>… driver API name";
    } else if (!pa.found) {
      c.reason = "no cuGetProcAddress table was found in this file";
    } else if (auto w = wrapper.find(c.name); w != wrapper.end()) {
      const auto& d = *w->second;
      if (d.kind == cuda::WrapperKind::kConstant) {
        const auto* err = d.constant ? et.by_code(*d.constant) : nullptr;
        c.reason = fmt::format("retired entry point: returns {}{} without dispatching",
                               d.constant.value_or(0),
                               err ? fmt::format(" ({})", err->name) : std::string());
      } else if (d.kind == cuda::WrapperKind::kOther) {
        c.reason = fmt::format("not a dispatch wrapper: {}", d.note);
      } else {
        c.reason =
            "dispatch wrapper that no cuGetProcAddress row returns (reachable only "
            "through its export)";
      }
    } else {
      c.reason = "not in an executable section";
    }
    coverage_->push_back(std::move(c));
  }
  return *coverage_;
}

namespace {

using NamedFunction = DriverTables::NamedFunction;

// By address, keeping the order of equal addresses: (address, index) pairs are sorted (a third
// of stable_sort's cost on the structs) and the order applied in place, a cycle at a time (a
// sorted copy was ~200 KB of fresh pages).
void sort_by_address(std::vector<NamedFunction>& items) {
  std::vector<std::pair<uint64_t, uint32_t>> order(items.size());
  for (size_t i = 0; i < items.size(); ++i) order[i] = {items[i].address, static_cast<uint32_t>(i)};
  std::sort(order.begin(), order.end());
  std::vector<uint32_t> from(items.size());
  for (size_t i = 0; i < items.size(); ++i) from[i] = order[i].second;
  permute_in_place(items, std::span<uint32_t>(from));
}

}  // namespace

std::vector<NamedFunction> DriverTables::dispatch_names(bool with_sources) {
  std::vector<NamedFunction> out;
  const auto& dm = dispatch();
  out.reserve(dm.entries.size());
  for (const auto& d : dm.entries) {
    if (d.implementation != 0)
      out.push_back({.address = d.implementation,
                     .name = d.export_name,
                     .source = with_sources ? "impl via dispatch" : "",
                     .kind = NamedFunction::Kind::kDispatch});
  }
  sort_by_address(out);
  return out;
}

std::vector<NamedFunction> DriverTables::procaddress_names(bool with_sources) {
  std::vector<NamedFunction> out;
  const auto& pa = procaddress();
  out.reserve(pa.rows.size());
  auto made = [&](const std::string& s) { return names_made_.intern(s); };
  for (const auto& r : pa.rows) {
    if (r.function == 0 || !r.export_name.empty()) continue;
    out.push_back({.address = r.function,
                   .name = r.api,
                   .source = with_sources
                                 ? made(fmt::format("procaddress {} v{} {}", r.api, r.cuda_version,
                                                    cuda::proc_flags_name(r.flags)))
                                 : "",
                   .kind = NamedFunction::Kind::kProcAddress});
  }
  sort_by_address(out);
  return out;
}

std::vector<NamedFunction> DriverTables::export_table_names(bool with_sources) {
  std::vector<NamedFunction> out;
  const auto& et = export_tables();
  size_t slots = 0;
  for (const auto& t : et.tables) slots += t.slots.size();
  out.reserve(slots);
  auto made = [&](const std::string& s) { return names_made_.intern(s); };
  for (const auto& t : et.tables) {
    std::string uuid = cuda::format_uuid(t.uuid);
    // "<TABLE>.<slot name>", "<TABLE>.slot<n>" or "etbl_<uuid's first 8 digits>_<n>": ~2,000
    // names on 550, so put together rather than formatted.
    std::string_view prefix = t.known ? t.known->name : std::string_view("etbl_");
    std::string_view uuid8 = t.known ? std::string_view() : std::string_view(uuid).substr(0, 8);
    for (const auto& s : t.slots) {
      if (s.kind != cuda::SlotKind::kFunction || !s.export_name.empty()) continue;
      char index[12];
      std::string_view number(
          index,
          static_cast<size_t>(std::to_chars(index, index + sizeof index, s.index).ptr - index));
      std::string_view name = t.known && !s.known_name.empty()
                                  ? names_made_.concat({prefix, ".", s.known_name})
                              : t.known ? names_made_.concat({prefix, ".slot", number})
                                        : names_made_.concat({prefix, uuid8, "_", number});
      out.push_back(
          {s.value, name,
           with_sources ? made(fmt::format("export table {} slot {}", uuid, s.index)) : "",
           NamedFunction::Kind::kExportTable});
    }
  }
  sort_by_address(out);
  return out;
}

DriverTables::NameParts DriverTables::function_name_parts(bool with_sources) {
  build_name_tables();
  NameParts parts;
  parts[0] = dispatch_names(with_sources);
  parts[1] = !with_sources && procaddress_names_ ? std::move(*procaddress_names_)
                                                 : procaddress_names(with_sources);
  parts[2] = !with_sources && export_table_names_ ? std::move(*export_table_names_)
                                                  : export_table_names(with_sources);
  procaddress_names_.reset();
  export_table_names_.reset();
  return parts;
}

std::vector<NamedFunction> DriverTables::function_names(bool with_sources) {
  return merge_in_address_order(function_name_parts(with_sources));
}

std::vector<NamedFunction> DriverTables::merge_in_address_order(
    std::span<const std::vector<NamedFunction>> parts) {
  std::vector<NamedFunction> out;
  size_t total = 0;
  for (const auto& p : parts) total += p.size();
  out.reserve(total);
  prefault_capacity(out);
  merge_in_address_order(parts, [&](const NamedFunction& n) { out.push_back(n); });
  return out;
}

void DriverTables::merge_in_address_order(std::span<const std::vector<NamedFunction>> parts,
                                          const std::function<void(const NamedFunction&)>& visit) {
  std::vector<size_t> pos(parts.size(), 0);
  const NamedFunction* last = nullptr;  // the last name given
  for (;;) {
    size_t pick = parts.size();
    for (size_t k = 0; k < parts.size(); ++k) {
      if (pos[k] == parts[k].size()) continue;
      if (pick == parts.size() || parts[k][pos[k]].address < parts[pick][pos[pick]].address)
        pick = k;
    }
    if (pick == parts.size()) break;
    const NamedFunction& n = parts[pick][pos[pick]++];
    if (last != nullptr && last->address == n.address && last->name == n.name) continue;
    visit(n);
    last = &n;
  }
}

}  // namespace cudatool
