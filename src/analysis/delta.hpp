// What changed between two builds, at the interface level (facts, never bytes), and the history
// of a series of builds. Symmetric by construction: delta(A, B) is delta(B, A) with every
// "added" and "removed" swapped and every old/new pair exchanged.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/build_facts.hpp"

namespace cudatool {

// Exports that share an API base name ("cuCtxCreate": cuCtxCreate_v2, cuCtxCreate_v3 …).
struct ApiGroup {
  std::string base;
  std::vector<std::string> names;
};

struct SizeChange {
  std::string what;  // ".text", ".rodata", "functions", "file", "exports", "imports"
  uint64_t old_value = 0;
  uint64_t new_value = 0;
  [[nodiscard]] int64_t diff() const {
    return static_cast<int64_t>(new_value) - static_cast<int64_t>(old_value);
  }
};

struct FunctionMover {
  std::string name;
  uint64_t old_size = 0;
  uint64_t new_size = 0;
};

struct FunctionDelta {
  uint64_t old_count = 0, new_count = 0;
  uint64_t unchanged = 0;  // same masked fingerprint (multiset match)
  uint64_t changed = 0;    // same name in both, different code
  uint64_t added = 0;      // in new, neither matched by code nor by name (includes changed unnamed)
  uint64_t removed = 0;    // the mirror of added
  std::vector<FunctionMover> largest_movers;  // changed named functions by |size change|
};

struct CubinDelta {
  std::vector<std::string> archs_added, archs_removed;
  // arch -> (old images, new images) where the count changed
  std::map<std::string, std::pair<uint64_t, uint64_t>, cuda::ArchLess> images_per_arch;
  // family -> kernels added / removed
  std::map<std::string, std::vector<std::string>> kernels_added, kernels_removed;
  std::vector<std::string> families_added, families_removed;
};

struct RowChange {
  std::string key;  // "cuMemAlloc @ 3020", a UUID, an error code
  std::string old_value;
  std::string new_value;
};

struct TableDelta {
  std::vector<std::string> procaddress_added, procaddress_removed;
  std::vector<RowChange> procaddress_changed;
  std::vector<std::string> export_tables_added, export_tables_removed;
  std::vector<RowChange> export_tables_changed;  // slot count or size word
  std::vector<std::string> errors_added, errors_removed;
  std::vector<RowChange> errors_changed;  // name or description
};

struct Delta {
  std::string old_path, new_path;
  std::optional<std::string> old_version, new_version;
  std::optional<std::string> old_build_id, new_build_id;
  bool same_build = false;  // identical build ids

  // fwd-compat note
  NoteFacts old_note, new_note;
  std::vector<int64_t> branches_added, branches_removed, devices_added, devices_removed;
  bool note_changed = false;

  // exports
  std::vector<ApiGroup> apis_added;        // base names that did not exist before
  std::vector<ApiGroup> apis_removed;      // base names that no longer exist
  std::vector<ApiGroup> new_api_versions;  // existing bases that gained _vN names
  std::vector<ApiGroup> new_variants;      // existing bases that gained _ptsz/_ptds names
  std::vector<ApiGroup> removed_api_versions, removed_variants;  // mirrors of the two above
  // Exported data (OBJECT symbols: cuda-gdb's cudbgReported…), not API calls.
  std::vector<std::string> objects_added, objects_removed;
  std::vector<std::string> exports_added, exports_removed;  // every name, flat
  // imports
  std::vector<ImportFact> imports_added, imports_removed;
  std::vector<std::string> versions_required_added, versions_required_removed;

  std::vector<SizeChange> sizes;
  std::optional<FunctionDelta> functions;
  std::optional<CubinDelta> cubins;
  std::optional<TableDelta> tables;

  // Nothing at the interface level changed (sizes and function bytes may still differ).
  [[nodiscard]] bool interface_unchanged() const;
};

Delta compute_delta(const BuildFacts& old_facts, const BuildFacts& new_facts);

// One row per build, sorted by driver version, and for every export name the first build of
// the series that exports it.
struct History {
  std::vector<const BuildFacts*> builds;            // sorted
  std::map<std::string, std::string> export_since;  // name -> first version (or path)
  std::map<std::string, std::string> api_since;     // API base name -> first version
  // Base names whose exports are all data (OBJECT: cuda-gdb's cudbgReported…), not APIs, as
  // delta counts them apart -> first version.
  std::map<std::string, std::string> data_since;
  std::vector<std::string> archs;  // union of cubin architectures, sorted
};

History compute_history(const std::vector<BuildFacts>& facts);
// The label a build goes by in reports: its driver version, else its path.
std::string build_label(const BuildFacts& f);

}  // namespace cudatool
