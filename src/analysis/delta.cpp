#include "analysis/delta.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <unordered_map>

namespace cudatool {
namespace {

template <class T>
void set_diff(const std::vector<T>& a, const std::vector<T>& b, std::vector<T>& only_a,
              std::vector<T>& only_b) {
  std::set<T> sa(a.begin(), a.end()), sb(b.begin(), b.end());
  for (const auto& x : sa) {
    if (!sb.count(x)) only_a.push_back(x);
  }
  for (const auto& x : sb) {
    if (!sa.count(x)) only_b.push_back(x);
  }
}

std::map<std::string, std::vector<const ExportFact*>> by_base(const std::vector<ExportFact>& v) {
  std::map<std::string, std::vector<const ExportFact*>> m;
  for (const auto& e : v) m[e.base].push_back(&e);
  return m;
}

// Exported data (OBJECT symbols: cuda-gdb's cudbgReported…) is not an API: a base name whose
// every export is data is counted apart, by delta and history alike.
bool all_data(const std::vector<const ExportFact*>& v) {
  return std::all_of(v.begin(), v.end(), [](const ExportFact* e) { return e->type == "OBJECT"; });
}

void diff_exports(const BuildFacts& a, const BuildFacts& b, Delta& d) {
  std::vector<std::string> na, nb;
  for (const auto& e : a.exports) na.push_back(e.name);
  for (const auto& e : b.exports) nb.push_back(e.name);
  set_diff(na, nb, d.exports_removed, d.exports_added);
  auto ga = by_base(a.exports), gb = by_base(b.exports);
  std::set<std::string> added(d.exports_added.begin(), d.exports_added.end());
  std::set<std::string> removed(d.exports_removed.begin(), d.exports_removed.end());
  // Walk every base of either side; classify its added/removed names.
  std::set<std::string> bases;
  for (const auto& [k, v] : ga) bases.insert(k);
  for (const auto& [k, v] : gb) bases.insert(k);
  for (const auto& base : bases) {
    bool in_a = ga.count(base) > 0, in_b = gb.count(base) > 0;
    // Exported data is not an API: its names are listed apart.
    if (!in_a && all_data(gb[base])) {
      for (const auto* e : gb[base]) d.objects_added.push_back(e->name);
      continue;
    }
    if (!in_b && all_data(ga[base])) {
      for (const auto* e : ga[base]) d.objects_removed.push_back(e->name);
      continue;
    }
    if (!in_a) {
      ApiGroup g{base, {}};
      for (const auto* e : gb[base]) g.names.push_back(e->name);
      d.apis_added.push_back(std::move(g));
      continue;
    }
    if (!in_b) {
      ApiGroup g{base, {}};
      for (const auto* e : ga[base]) g.names.push_back(e->name);
      d.apis_removed.push_back(std::move(g));
      continue;
    }
    // The base exists on both sides: what changed is a version or a variant.
    ApiGroup vers_added{base, {}}, vars_added{base, {}}, vers_removed{base, {}},
        vars_removed{base, {}};
    auto classify = [&](const std::vector<const ExportFact*>& side,
                        const std::set<std::string>& which,
                        const std::vector<const ExportFact*>& other, ApiGroup& vers,
                        ApiGroup& vars) {
      for (const auto* e : side) {
        if (!which.count(e->name)) continue;
        // A new variant: the same _vN existed without this variant on the other side.
        bool version_existed = std::any_of(other.begin(), other.end(), [&](const ExportFact* o) {
          return o->api_version == e->api_version;
        });
        if (!e->variant.empty() && version_existed) {
          vars.names.push_back(e->name);
        } else {
          vers.names.push_back(e->name);
        }
      }
    };
    classify(gb[base], added, ga[base], vers_added, vars_added);
    classify(ga[base], removed, gb[base], vers_removed, vars_removed);
    if (!vers_added.names.empty()) d.new_api_versions.push_back(std::move(vers_added));
    if (!vars_added.names.empty()) d.new_variants.push_back(std::move(vars_added));
    if (!vers_removed.names.empty()) d.removed_api_versions.push_back(std::move(vers_removed));
    if (!vars_removed.names.empty()) d.removed_variants.push_back(std::move(vars_removed));
  }
}

void diff_imports(const BuildFacts& a, const BuildFacts& b, Delta& d) {
  auto key = [](const ImportFact& i) { return i.name + "@" + i.version; };
  std::map<std::string, const ImportFact*> ma, mb;
  for (const auto& i : a.imports) ma[key(i)] = &i;
  for (const auto& i : b.imports) mb[key(i)] = &i;
  for (const auto& [k, i] : ma) {
    if (!mb.count(k)) d.imports_removed.push_back(*i);
  }
  for (const auto& [k, i] : mb) {
    if (!ma.count(k)) d.imports_added.push_back(*i);
  }
  std::vector<std::string> va, vb;
  for (const auto& i : a.imports) {
    if (!i.version.empty()) va.push_back(i.version);
  }
  for (const auto& i : b.imports) {
    if (!i.version.empty()) vb.push_back(i.version);
  }
  set_diff(va, vb, d.versions_required_removed, d.versions_required_added);
}

void diff_note(const BuildFacts& a, const BuildFacts& b, Delta& d) {
  d.old_note = a.note;
  d.new_note = b.note;
  set_diff(a.note.driver_branches, b.note.driver_branches, d.branches_removed, d.branches_added);
  set_diff(a.note.device_generations, b.note.device_generations, d.devices_removed,
           d.devices_added);
  d.note_changed = a.note.status != b.note.status || a.note.format != b.note.format ||
                   a.note.cuda_version != b.note.cuda_version || !d.branches_added.empty() ||
                   !d.branches_removed.empty() || !d.devices_added.empty() ||
                   !d.devices_removed.empty();
}

void diff_sizes(const BuildFacts& a, const BuildFacts& b, Delta& d) {
  auto sec = [](const BuildFacts& f, const char* n) {
    auto it = f.section_sizes.find(n);
    return it == f.section_sizes.end() ? uint64_t{0} : it->second;
  };
  d.sizes.push_back({"file", a.file_size, b.file_size});
  for (const char* n : {".text", ".rodata", ".data.rel.ro", ".eh_frame"}) {
    d.sizes.push_back({n, sec(a, n), sec(b, n)});
  }
  d.sizes.push_back({"exports", a.exports.size(), b.exports.size()});
  d.sizes.push_back({"imports", a.imports.size(), b.imports.size()});
  if (a.functions && b.functions) {
    d.sizes.push_back({"functions", a.functions->count, b.functions->count});
  }
}

void diff_functions(const FunctionFacts& a, const FunctionFacts& b, Delta& d) {
  FunctionDelta f;
  f.old_count = a.functions.size();
  f.new_count = b.functions.size();
  // Unchanged: multiset intersection of fingerprints (symmetric).
  std::unordered_map<uint64_t, int64_t> budget;
  for (const auto& x : a.functions) ++budget[x.fingerprint];
  std::vector<bool> b_matched(b.functions.size(), false);
  std::unordered_map<uint64_t, int64_t> taken;
  for (size_t i = 0; i < b.functions.size(); ++i) {
    auto it = budget.find(b.functions[i].fingerprint);
    if (it != budget.end() && it->second > 0) {
      --it->second;
      b_matched[i] = true;
      ++taken[b.functions[i].fingerprint];
      ++f.unchanged;
    }
  }
  std::vector<bool> a_matched(a.functions.size(), false);
  for (size_t i = 0; i < a.functions.size(); ++i) {
    auto it = taken.find(a.functions[i].fingerprint);
    if (it != taken.end() && it->second > 0) {
      --it->second;
      a_matched[i] = true;
    }
  }
  // Changed: a name on both sides whose code did not match. Names are unique per side except
  // for aliases; the first function carrying a name represents it.
  std::map<std::string, size_t> names_a, names_b;
  for (size_t i = 0; i < a.functions.size(); ++i) {
    if (!a.functions[i].name.empty()) names_a.emplace(a.functions[i].name, i);
  }
  for (size_t i = 0; i < b.functions.size(); ++i) {
    if (!b.functions[i].name.empty()) names_b.emplace(b.functions[i].name, i);
  }
  for (const auto& [name, ia] : names_a) {
    auto it = names_b.find(name);
    if (it == names_b.end()) continue;
    size_t ib = it->second;
    if (a_matched[ia] || b_matched[ib]) continue;
    a_matched[ia] = b_matched[ib] = true;
    ++f.changed;
    f.largest_movers.push_back({name, a.functions[ia].size, b.functions[ib].size});
  }
  f.added = static_cast<uint64_t>(std::count(b_matched.begin(), b_matched.end(), false));
  f.removed = static_cast<uint64_t>(std::count(a_matched.begin(), a_matched.end(), false));
  std::stable_sort(
      f.largest_movers.begin(), f.largest_movers.end(),
      [](const FunctionMover& x, const FunctionMover& y) {
        auto dx =
            std::llabs(static_cast<long long>(x.new_size) - static_cast<long long>(x.old_size));
        auto dy =
            std::llabs(static_cast<long long>(y.new_size) - static_cast<long long>(y.old_size));
        if (dx != dy) return dx > dy;
        return x.name < y.name;
      });
  d.functions = std::move(f);
}

void diff_cubins(const CubinFacts& a, const CubinFacts& b, Delta& d) {
  CubinDelta c;
  std::set<std::string, cuda::ArchLess> archs;
  for (const auto& [k, v] : a.images_per_arch) archs.insert(k);
  for (const auto& [k, v] : b.images_per_arch) archs.insert(k);
  for (const auto& arch : archs) {
    uint64_t na = a.images_per_arch.count(arch) ? a.images_per_arch.at(arch) : 0;
    uint64_t nb = b.images_per_arch.count(arch) ? b.images_per_arch.at(arch) : 0;
    if (na == 0 && nb > 0) c.archs_added.push_back(arch);
    if (nb == 0 && na > 0) c.archs_removed.push_back(arch);
    if (na != nb) c.images_per_arch[arch] = {na, nb};
  }
  std::set<std::string> fams;
  for (const auto& [k, v] : a.kernels_per_family) fams.insert(k);
  for (const auto& [k, v] : b.kernels_per_family) fams.insert(k);
  for (const auto& fam : fams) {
    bool in_a = a.kernels_per_family.count(fam) > 0, in_b = b.kernels_per_family.count(fam) > 0;
    if (!in_a) c.families_added.push_back(fam);
    if (!in_b) c.families_removed.push_back(fam);
    if (!in_a || !in_b) continue;
    const auto& ka = a.kernels_per_family.at(fam);
    const auto& kb = b.kernels_per_family.at(fam);
    for (const auto& k : kb) {
      if (!ka.count(k)) c.kernels_added[fam].push_back(k);
    }
    for (const auto& k : ka) {
      if (!kb.count(k)) c.kernels_removed[fam].push_back(k);
    }
  }
  d.cubins = std::move(c);
}

void diff_tables(const TableFacts& a, const TableFacts& b, Delta& d) {
  TableDelta t;
  auto pkey = [](const ProcAddressRow& r) {
    return fmt::format("{} @ {}", r.name, r.cuda_version);
  };
  auto pval = [](const ProcAddressRow& r) {
    return fmt::format("flags {}, {}", r.flags, r.implementation.empty() ? "-" : r.implementation);
  };
  std::map<std::string, std::string> pa, pb;
  for (const auto& r : a.procaddress) pa[pkey(r)] = pval(r);
  for (const auto& r : b.procaddress) pb[pkey(r)] = pval(r);
  for (const auto& [k, v] : pa) {
    auto it = pb.find(k);
    if (it == pb.end())
      t.procaddress_removed.push_back(k);
    else if (it->second != v)
      t.procaddress_changed.push_back({k, v, it->second});
  }
  for (const auto& [k, v] : pb) {
    if (!pa.count(k)) t.procaddress_added.push_back(k);
  }
  auto tval = [](const ExportTableFact& e) {
    return fmt::format("{} slots, size word {}", e.slots,
                       e.declared_size ? fmt::format("{:#x}", *e.declared_size) : "none");
  };
  auto tkey = [](const ExportTableFact& e) {
    return e.name.empty() ? e.uuid : fmt::format("{} ({})", e.uuid, e.name);
  };
  std::map<std::string, const ExportTableFact*> ta, tb;
  for (const auto& e : a.export_tables) ta[e.uuid] = &e;
  for (const auto& e : b.export_tables) tb[e.uuid] = &e;
  for (const auto& [k, e] : ta) {
    auto it = tb.find(k);
    if (it == tb.end())
      t.export_tables_removed.push_back(tkey(*e));
    else if (tval(*e) != tval(*it->second))
      t.export_tables_changed.push_back({tkey(*e), tval(*e), tval(*it->second)});
  }
  for (const auto& [k, e] : tb) {
    if (!ta.count(k)) t.export_tables_added.push_back(tkey(*e));
  }
  std::map<int64_t, const ErrorFact*> ea, eb;
  for (const auto& e : a.errors) ea[e.code] = &e;
  for (const auto& e : b.errors) eb[e.code] = &e;
  auto ekey = [](const ErrorFact& e) { return fmt::format("{} {}", e.code, e.name); };
  auto eval = [](const ErrorFact& e) { return fmt::format("{}: {}", e.name, e.description); };
  for (const auto& [k, e] : ea) {
    auto it = eb.find(k);
    if (it == eb.end())
      t.errors_removed.push_back(ekey(*e));
    else if (eval(*e) != eval(*it->second))
      t.errors_changed.push_back({std::to_string(k), eval(*e), eval(*it->second)});
  }
  for (const auto& [k, e] : eb) {
    if (!ea.count(k)) t.errors_added.push_back(ekey(*e));
  }
  d.tables = std::move(t);
}

}  // namespace

bool Delta::interface_unchanged() const {
  bool t = !tables || (tables->procaddress_added.empty() && tables->procaddress_removed.empty() &&
                       tables->procaddress_changed.empty() && tables->export_tables_added.empty() &&
                       tables->export_tables_removed.empty() &&
                       tables->export_tables_changed.empty() && tables->errors_added.empty() &&
                       tables->errors_removed.empty() && tables->errors_changed.empty());
  bool c = !cubins || (cubins->archs_added.empty() && cubins->archs_removed.empty() &&
                       cubins->images_per_arch.empty() && cubins->kernels_added.empty() &&
                       cubins->kernels_removed.empty() && cubins->families_added.empty() &&
                       cubins->families_removed.empty());
  return !note_changed && exports_added.empty() && exports_removed.empty() &&
         imports_added.empty() && imports_removed.empty() && t && c;
}

Delta compute_delta(const BuildFacts& a, const BuildFacts& b) {
  Delta d;
  d.old_path = a.path;
  d.new_path = b.path;
  d.old_version = a.driver_version;
  d.new_version = b.driver_version;
  d.old_build_id = a.build_id;
  d.new_build_id = b.build_id;
  d.same_build = a.build_id && b.build_id && *a.build_id == *b.build_id;
  diff_note(a, b, d);
  diff_exports(a, b, d);
  diff_imports(a, b, d);
  diff_sizes(a, b, d);
  if (a.functions && b.functions) diff_functions(*a.functions, *b.functions, d);
  if (a.cubins && b.cubins) diff_cubins(*a.cubins, *b.cubins, d);
  if (a.tables && b.tables) diff_tables(*a.tables, *b.tables, d);
  return d;
}

std::string build_label(const BuildFacts& f) {
  return f.driver_version.value_or(f.path);
}

History compute_history(const std::vector<BuildFacts>& facts) {
  History h;
  for (const auto& f : facts) h.builds.push_back(&f);
  std::stable_sort(h.builds.begin(), h.builds.end(), [](const BuildFacts* x, const BuildFacts* y) {
    return version_less(build_label(*x), build_label(*y));
  });
  std::set<std::string, cuda::ArchLess> archs;
  for (const BuildFacts* f : h.builds) {
    for (const auto& e : f->exports) h.export_since.emplace(e.name, build_label(*f));
    for (const auto& [base, exports] : by_base(f->exports)) {
      (all_data(exports) ? h.data_since : h.api_since).emplace(base, build_label(*f));
    }
    if (f->cubins) {
      for (const auto& [arch, n] : f->cubins->images_per_arch) archs.insert(arch);
    }
  }
  h.archs.assign(archs.begin(), archs.end());
  return h;
}

}  // namespace cudatool
