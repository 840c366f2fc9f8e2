// The interface-level facts of one libcuda build, gathered once from the facets of a DriverImage.
// `delta` and `history` compare these facts, never bytes: two builds are different where a user
// of the interface (an emulator, a remoting layer) would see a difference.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/driver_image.hpp"
#include "cuda/cubin_arch.hpp"

namespace cudatool {

struct ExportFact {
  std::string name;
  std::string base;
  uint32_t api_version = 0;  // _vN
  std::string variant;       // "", "ptsz", "ptds"
  std::string domain;
  std::string type;  // FUNC, OBJECT, …
  uint64_t address = 0;
  uint64_t size = 0;
};

struct ImportFact {
  std::string name;
  std::string version;  // "GLIBC_2.2.5"; "" when unversioned
  std::string library;
};

struct NoteFacts {
  std::string status;  // "present", "absent", "damaged"
  std::optional<int64_t> format;
  std::optional<std::string> cuda_version;
  std::vector<int64_t> driver_branches;
  std::vector<int64_t> device_generations;
};

// A function of the map: where, how big, what it is called, and a fingerprint of its bytes with
// addresses masked (x86_length.hpp), so that the same code matches across builds.
struct FunctionFact {
  uint64_t start = 0;
  uint64_t size = 0;
  std::string name;  // best known name; "" when unnamed
  uint64_t fingerprint = 0;
};

struct FunctionFacts {
  uint64_t count = 0;
  std::vector<FunctionFact> functions;
};

struct CubinFacts {
  uint64_t images = 0;
  uint64_t bytes = 0;
  // By architecture, in numeric order (sm_90a before sm_100).
  std::map<std::string, uint64_t, cuda::ArchLess> images_per_arch;
  std::map<std::string, uint64_t, cuda::ArchLess> bytes_per_arch;
  // Kernel names per image family (images grouped by what they are for, e.g. the set of kernel
  // names of one image, keyed by the arch-independent family name).
  std::map<std::string, std::set<std::string>> kernels_per_family;
};

struct ProcAddressRow {
  std::string name;
  uint64_t cuda_version = 0;
  std::string flags;
  std::string implementation;  // export name or "" (addresses are not compared across builds)
};

struct ExportTableFact {
  std::string uuid;  // 8-4-4-4-12
  std::string name;  // community name if known
  uint64_t slots = 0;
  std::optional<uint64_t> declared_size;
};

struct ErrorFact {
  int64_t code = 0;
  std::string name;
  std::string description;
};

struct TableFacts {
  std::vector<ProcAddressRow> procaddress;
  std::vector<ExportTableFact> export_tables;
  std::vector<ErrorFact> errors;
};

struct BuildFacts {
  std::string path;
  std::optional<std::string> driver_version;
  std::string version_source;
  std::optional<std::string> build_id;
  uint64_t file_size = 0;
  std::map<std::string, uint64_t> section_sizes;  // every section, by name
  NoteFacts note;
  std::vector<ExportFact> exports;  // sorted by name
  std::vector<ImportFact> imports;  // sorted by name
  std::optional<FunctionFacts> functions;
  std::optional<CubinFacts> cubins;
  std::optional<TableFacts> tables;
  std::vector<std::string> diagnostics;
};

struct FactOptions {
  bool functions = true;
  bool cubins = true;
  bool tables = true;
};

// Gathers the facts; what a facet could not provide is left empty and its problems are in
// `diagnostics`.
BuildFacts collect_facts(DriverImage& img, const FactOptions& opts = {});

// Orders driver versions numerically ("535.261.03" < "550.54.09" < "550.163.01").
bool version_less(const std::string& a, const std::string& b);

}  // namespace cudatool
