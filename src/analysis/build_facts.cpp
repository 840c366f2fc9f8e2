#include "analysis/build_facts.hpp"

#include <algorithm>
#include <charconv>

#include "analysis/driver_tables.hpp"
#include "analysis/embedded_images.hpp"
#include "analysis/function_map.hpp"
#include "analysis/function_names.hpp"
#include "base/x86_length.hpp"

namespace cudatool {
namespace {

std::vector<uint64_t> version_parts(const std::string& v) {
  std::vector<uint64_t> parts;
  size_t i = 0;
  while (i < v.size()) {
    uint64_t n = 0;
    auto r = std::from_chars(v.data() + i, v.data() + v.size(), n);
    parts.push_back(n);
    i = static_cast<size_t>(r.ptr - v.data());
    if (i < v.size()) ++i;  // skip the separator (or a non-digit)
  }
  return parts;
}

void collect_exports_imports(DriverImage& img, BuildFacts& f) {
  for (const auto& e : img.exports()) {
    ExportFact x;
    x.name = std::string(e.sym.name);
    x.base = std::string(e.api.base);
    x.api_version = e.api.version;
    x.variant = std::string(cuda::variant_name(e.api.variant));
    x.domain = std::string(e.api.domain);
    x.type = elf::symbol_type_name(e.sym.type());
    x.address = e.sym.st_value;
    x.size = e.sym.st_size;
    f.exports.push_back(std::move(x));
  }
  std::sort(f.exports.begin(), f.exports.end(),
            [](const ExportFact& a, const ExportFact& b) { return a.name < b.name; });
  for (const auto& i : img.imports()) {
    f.imports.push_back({std::string(i.sym.name), std::string(i.version), std::string(i.library)});
  }
  std::sort(f.imports.begin(), f.imports.end(),
            [](const ImportFact& a, const ImportFact& b) { return a.name < b.name; });
}

void collect_note(DriverImage& img, BuildFacts& f) {
  const auto& n = img.fwd_compat_note();
  if (n) {
    f.note.status = "present";
    f.note.format = n->format;
    f.note.cuda_version = n->cuda_version;
    f.note.driver_branches = n->driver_branches;
    f.note.device_generations = n->device_generations;
  } else {
    f.note.status = img.fwd_compat_error() ? "damaged" : "absent";
  }
}

void collect_tables(DriverImage& img, BuildFacts& f) {
  auto& t = img.facet<DriverTables>();
  TableFacts out;
  for (const auto& r : t.procaddress().rows) {
    out.procaddress.push_back({.name = std::string(r.api),
                               .cuda_version = r.cuda_version,
                               .flags = std::string(cuda::proc_flags_name(r.flags)),
                               .implementation = std::string(r.export_name)});
  }
  for (const auto& e : t.export_tables().tables) {
    ExportTableFact x;
    x.uuid = cuda::format_uuid(e.uuid);
    if (e.known != nullptr) x.name = std::string(e.known->name);
    x.slots = e.slot_count;
    x.declared_size = e.declared_size;
    out.export_tables.push_back(std::move(x));
  }
  for (const auto& e : t.errors().entries) {
    out.errors.push_back({e.code, std::string(e.name), std::string(e.description)});
  }
  f.tables = std::move(out);
}

void collect_functions(DriverImage& img, BuildFacts& f, bool table_names) {
  FunctionMap& map = img.facet<FunctionMap>();
  if (table_names) add_driver_table_names(img, map);
  FunctionFacts out;
  out.count = map.functions().size();
  out.functions.reserve(map.functions().size());
  for (const auto& fn : map.functions()) {
    FunctionFact x;
    x.start = fn.start;
    x.size = fn.size;
    auto names = map.names(fn);
    if (!names.empty()) x.name = std::string(names.front().name);
    // Code that is not in the file (NOBITS, damaged) hashes as empty: it matches nothing
    // meaningful, which is what it is.
    if (auto bytes = img.elf().bytes_at_vaddr(fn.start, fn.size)) {
      x.fingerprint = x86::masked_fingerprint(*bytes);
    }
    out.functions.push_back(std::move(x));
  }
  f.functions = std::move(out);
}

// Images are grouped into families by their kernels: the same program built for several
// architectures is one family, named after its alphabetically first kernel.
void collect_cubins(DriverImage& img, BuildFacts& f) {
  auto& emb = img.facet<EmbeddedImages>();
  CubinFacts out;
  out.bytes = emb.total_bytes();
  for (const auto& im : emb.images()) {
    if (im.kind == ImageKind::kFatbin) continue;  // containers: their entries are counted
    ++out.images;
    std::string arch = im.arch.empty() ? std::string("unknown") : im.arch;
    ++out.images_per_arch[arch];
    out.bytes_per_arch[arch] += im.size;
    std::set<std::string> kernels;
    if (im.cubin) {
      for (const auto& k : im.cubin->kernels) {
        if (k.entry) kernels.insert(std::string(k.name));
      }
    }
    std::string family = kernels.empty() ? std::string("(no kernels)") : *kernels.begin();
    out.kernels_per_family[family].insert(kernels.begin(), kernels.end());
  }
  f.cubins = std::move(out);
}

}  // namespace

bool version_less(const std::string& a, const std::string& b) {
  auto pa = version_parts(a), pb = version_parts(b);
  if (pa != pb) return pa < pb;
  return a < b;
}

BuildFacts collect_facts(DriverImage& img, const FactOptions& opts) {
  BuildFacts f;
  f.path = img.path();
  const auto& v = img.driver_version(false);
  f.driver_version = v.best();
  f.version_source = std::string(v.source());
  f.build_id = img.build_id();
  f.file_size = img.file().size();
  for (const auto& s : img.elf().sections()) {
    if (!s.name.empty()) f.section_sizes[std::string(s.name)] = s.sh_size;
  }
  collect_note(img, f);
  collect_exports_imports(img, f);
  if (opts.tables) collect_tables(img, f);
  if (opts.functions) collect_functions(img, f, opts.tables);
  if (opts.cubins) collect_cubins(img, f);
  for (const auto& e : img.diagnostics().items()) f.diagnostics.push_back(e.message());
  return f;
}

}  // namespace cudatool
