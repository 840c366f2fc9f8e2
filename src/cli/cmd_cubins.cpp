// cudatool cubins LIB: the GPU programs embedded in a library (cubins, fatbins, their entries).
#include <fmt/format.h>
#include <sys/stat.h>
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>

#include "analysis/embedded_images.hpp"
#include "base/decompress.hpp"
#include "base/errno_error.hpp"
#include "base/mapped_file.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/cubins_render.hpp"
#include "cuda/cubin_arch.hpp"

namespace cudatool::cli {
namespace {

struct CubinsOptions {
  std::string lib;
  bool json = false;
  bool summary = false;
  bool kernels = false;
  bool sections = false;
  bool rejected = false;
  std::string arch;
  std::string extract;
  std::string max_decompressed = "512M";
};

// "512M", "2G", "1048576": a byte count.
std::optional<uint64_t> parse_size(std::string_view s) {
  uint64_t mult = 1;
  if (!s.empty()) {
    char c = s.back();
    if (c == 'K' || c == 'k') mult = 1ull << 10;
    if (c == 'M' || c == 'm') mult = 1ull << 20;
    if (c == 'G' || c == 'g') mult = 1ull << 30;
    if (mult != 1) s.remove_suffix(1);
  }
  if (s.empty() || s.size() > 12) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v * mult;
}

// "sm_90" matches sm_90 and sm_90a/f (the same SM number); "sm_90a" only itself; "compute_80"
// the PTX entries and the ELF images whose virtual architecture it is.
bool arch_matches(const EmbeddedImage& im, std::string_view filter) {
  if (filter.empty()) return true;
  if (im.arch == filter) return true;
  if (im.cubin && im.cubin->target.virtual_arch == filter) return true;
  if (filter.starts_with("sm_") && im.arch.starts_with(filter)) {
    std::string_view rest = std::string_view(im.arch).substr(filter.size());
    return rest.size() == 1 && rest[0] >= 'a' && rest[0] <= 'z';
  }
  return false;
}

// "sm_90", "sm_90a", "compute_80": the forms --arch takes.
bool arch_form(std::string_view a) {
  for (std::string_view prefix : {"sm_", "compute_"}) {
    if (!a.starts_with(prefix)) continue;
    a.remove_prefix(prefix.size());
    size_t digits = 0;
    while (digits < a.size() && a[digits] >= '0' && a[digits] <= '9') ++digits;
    a.remove_prefix(digits);
    return digits > 0 && (a.empty() || (a.size() == 1 && a[0] >= 'a' && a[0] <= 'z'));
  }
  return false;
}

// When --arch selected nothing: why, with the architectures the file has. Returns the exit
// status: 2 for a value that is no architecture, 0 (after a note) for one the file lacks.
int say_arch_unmatched(const std::string& arch, const EmbeddedImages& scan) {
  std::set<std::string, cuda::ArchLess> have;
  for (const auto& im : scan.images()) {
    if (!im.arch.empty() && im.arch != "sm_?") have.insert(im.arch);
  }
  std::string list;
  for (const auto& a : have) list += (list.empty() ? "" : " ") + a;
  std::string has =
      have.empty() ? "this file has no GPU images" : fmt::format("this file has {}", list);
  if (!arch_form(arch)) {
    print_error(
        fmt::format("--arch {}: not an architecture (sm_90, sm_90a, compute_80); {}", arch, has));
    return kExitBadInput;
  }
  fmt::print(stderr, "cudatool: note: no image for architecture {}; {}\n", arch, has);
  return kExitOk;
}

bool write_file(const std::string& path, ByteView bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return false;
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(f);
}

std::string file_name(const EmbeddedImage& im) {
  std::string arch = im.arch.empty() || im.arch == "sm_?" ? "unknown" : im.arch;
  switch (im.kind) {
    case ImageKind::kCudaElf:
      return fmt::format("{:#010x}_{}.cubin", im.offset, arch);
    case ImageKind::kFatbin:
      return fmt::format("{:#010x}_fatbin.fatbin", im.offset);
    case ImageKind::kFatbinElf:
      return fmt::format("{:#010x}_e{}_{}.cubin", im.offset, *im.entry_index, arch);
    case ImageKind::kFatbinPtx:
      return fmt::format("{:#010x}_e{}_{}.ptx", im.offset, *im.entry_index, arch);
    case ImageKind::kFatbinOther:
      return fmt::format("{:#010x}_e{}_{}.bin", im.offset, *im.entry_index, arch);
  }
  return fmt::format("{:#010x}.bin", im.offset);
}

// Writes every shown image that has bytes; returns false (after printing why) on an I/O error.
bool extract(CubinsView& v, const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    print_error(fmt::format("--extract {}: {}", dir, errno_text("mkdir", errno)));
    return false;
  }
  for (const auto* im : v.shown) {
    if (im->content.empty()) continue;  // could not be sized or decompressed
    std::string name = file_name(*im);
    ByteView bytes = im->content;
    if (im->kind == ImageKind::kFatbinPtx) {
      // PTX is text: drop the NUL padding the container stores after it.
      uint64_t n = bytes.size();
      while (n > 0 && bytes.data()[n - 1] == 0) --n;
      bytes = bytes.clamp(0, n);
    }
    if (!write_file(dir + "/" + name, bytes)) {
      print_error("--extract: " + errno_text(fmt::format("cannot write {}/{}", dir, name), errno));
      return false;
    }
    v.files[im->index] = name;
  }
  std::string index = render_cubins_json(v);
  if (!write_file(dir + "/index.json", ByteView(index))) {
    print_error("--extract: " + errno_text(fmt::format("cannot write {}/index.json", dir), errno));
    return false;
  }
  return true;
}

// The images --arch selects (all without it); a container is shown when one of its entries is.
std::vector<const EmbeddedImage*> shown_images(const EmbeddedImages& scan,
                                               const std::string& arch) {
  std::vector<const EmbeddedImage*> shown;
  for (const auto& im : scan.images()) {
    if (arch_matches(im, arch)) {
      shown.push_back(&im);
    } else if (im.kind == ImageKind::kFatbin && !arch.empty()) {
      for (const auto& e : scan.images()) {
        if (e.container && *e.container == im.index && arch_matches(e, arch)) {
          shown.push_back(&im);
          break;
        }
      }
    }
  }
  return shown;
}

// What could not be read, image by image, on stderr; a hint when the decompression cap cut it.
void warn_images(const EmbeddedImages& scan, const std::string& max_decompressed) {
  bool over_total = false;
  for (const auto& im : scan.images()) {
    if (im.error) {
      fmt::print(stderr, "cudatool: warning: image {} at {:#x}: {}\n", im.index, im.offset,
                 im.error->message());
      over_total |= im.error->reason.find("limit on all decompressed") != std::string::npos;
    }
    for (const auto& p : im.problems) {
      fmt::print(stderr, "cudatool: warning: image {} at {:#x}: {}\n", im.index, im.offset,
                 p.message());
    }
  }
  if (over_total) {
    fmt::print(stderr,
               "cudatool: hint: more decompressed entries than --max-decompressed {} "
               "allows; raise it (e.g. --max-decompressed 4G)\n",
               max_decompressed);
  }
}

int run_cubins(const CubinsOptions& o) {
  auto total = parse_size(o.max_decompressed);
  if (!total) {
    print_error(
        fmt::format("--max-decompressed {}: not a size (e.g. 512M, 2G)", o.max_decompressed));
    return kExitBadInput;
  }
  cuda::DecompressLimits limits;
  limits.max_total_bytes = *total;
  // A library (or a .cubin) is read through DriverImage; any other file — a .fatbin, a memory
  // dump — is scanned as raw bytes, without sections or relocations.
  //
  // What is read here is deliberately never freed: the process ends right after printing, and
  // destroying a scan of libcuda (tens of thousands of small allocations, a 28 MB mapping) took
  // ~2 ms of a ~10 ms run. The kernel reclaims it all at exit (clang's -disable-free does the
  // same). The static pointer keeps it reachable, so LeakSanitizer does not report it.
  struct Session {
    std::unique_ptr<DriverImage> img;
    std::optional<MappedFile> raw;
    std::optional<EmbeddedImages> raw_scan;
  };
  static Session* session = nullptr;
  session = new Session();
  auto& img = session->img;
  auto& raw = session->raw;
  auto& raw_scan = session->raw_scan;
  if (!o.lib.empty()) {
    auto f = MappedFile::open(o.lib);
    if (!f) {
      print_error(f.error());
      return kExitBadInput;
    }
    // A compressed library (.xz, .zst, .gz) is decompressed by DriverImage like a plain one.
    bool elf = f->size() >= 4 && std::memcmp(f->bytes().data(),
                                             "\x7f"
                                             "ELF",
                                             4) == 0;
    if (!elf && detect_compression(f->bytes()) == Compression::kNone) {
      raw = std::move(*f);
      raw_scan.emplace(raw->bytes(), nullptr, limits);
    }
  }
  if (!raw) {
    img = open_library(o.lib);
    if (!img) return kExitBadInput;
  }
  if (!raw) raw_scan.emplace(*img, limits);
  const auto& scan = *raw_scan;
  Diagnostics none;
  CubinsView v;
  v.path = raw ? o.lib : img->path();
  v.file_size = raw ? raw->size() : img->file().size();
  v.scan = &scan;
  v.arch_filter = o.arch;
  v.diag = raw ? &none : &img->diagnostics();
  v.shown = shown_images(scan, o.arch);
  if (!o.arch.empty() && v.shown.empty()) {
    if (int rc = say_arch_unmatched(o.arch, scan); rc != kExitOk) return rc;
  }
  if (!o.extract.empty()) {
    if (!extract(v, o.extract)) return kExitBadInput;
    fmt::print(stderr, "cudatool: wrote {} images and index.json to {}\n", v.files.size(),
               o.extract);
  }
  if (o.summary) {
    emit(o.json ? render_summary_json(v) : render_summary_text(v));
  } else {
    emit(o.json ? render_cubins_json(v) : render_cubins_text(v, o.kernels, o.sections, o.rejected));
  }
  warn_images(scan, o.max_decompressed);
  int rc = report_diagnostics(*v.diag);
  return scan.damaged() > 0 ? kExitBadInput : rc;
}

}  // namespace

void register_cubins(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<CubinsOptions>();
  auto* cmd = app.add_subcommand(
      "cubins", "GPU programs embedded in the library: CUDA ELF images (cubins) and fatbins");
  cmd->add_option("LIB", o->lib,
                  "library to scan (default: the system's libcuda.so.1, found as the dynamic "
                  "loader would); a .cubin, a .fatbin or any other file is scanned too");
  cmd->add_flag("--json", o->json,
                "print JSON (schema cudatool.cubins/1; with --summary cudatool.cubins-summary/1)");
  cmd->add_flag("--summary", o->summary, "count images and bytes per architecture and kind");
  cmd->add_option("--arch", o->arch,
                  "only images for this architecture: sm_90 (also sm_90a/f), sm_90a, compute_80");
  cmd->add_flag("--kernels", o->kernels,
                "text: list each image's functions with registers, parameter sizes, frame/stack");
  cmd->add_flag("--sections", o->sections, "text: list each image's sections");
  cmd->add_flag("--rejected", o->rejected,
                "text: list the magic-number hits that are not GPU images, and why");
  cmd->add_option("--extract", o->extract,
                  "write each image to DIR/<offset>_<arch>.cubin (fatbin entries decompressed, "
                  "PTX as .ptx) and DIR/index.json (the --json document with file names)");
  cmd->add_option("--max-decompressed", o->max_decompressed,
                  "refuse to decompress fatbin entries beyond this many bytes in all "
                  "(default 512M; one entry is also refused above 64M or 1024x its compressed "
                  "size, as a likely decompression bomb)");
  cmd->footer(
      "Examples:\n"
      "  cudatool cubins ~/.cache/cudatool/drivers/libcuda.so.550.163.01\n"
      "  cudatool cubins LIB --summary\n"
      "  cudatool cubins LIB --arch sm_90 --kernels\n"
      "  cudatool cubins LIB --json | jq '.images[] | select(.arch==\"sm_80\") | "
      ".elf.kernels[].name'\n"
      "  cudatool cubins LIB --extract /tmp/cubins && ls /tmp/cubins\n"
      "Every \\x7fELF and fatbin magic (0xBA55ED50) in the file is examined: CUDA ELF images\n"
      "(e_machine 190) are sized from their own headers and decoded (EI_ABIVERSION 7 and 8\n"
      "e_flags, .note.nv.* notes, .nv.info attributes); fatbin entries compressed with LZ4 or\n"
      "zstd are decompressed (with a limit against decompression bombs). Hits that are not\n"
      "device code are listed with --rejected. Architecture suffixes (sm_90a) are decided by\n"
      "e_flags or, for CUDA 13 images, by the ptxas options in .note.nv.tkinfo; the JSON says\n"
      "which (arch_evidence).\n"
      "Exit status: 0 ok; 2 bad input, or an image that could not be decoded in full.");
  cmd->callback([o, exit_code] { *exit_code = run_cubins(*o); });
}

}  // namespace cudatool::cli
