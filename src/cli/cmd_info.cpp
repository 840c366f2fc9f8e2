// cudatool info LIB: what this build is.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <map>

#include "base/json_writer.hpp"
#include "base/sha256.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/json_diagnostics.hpp"

namespace cudatool::cli {
namespace {

constexpr std::array<std::string_view, 10> kSectionsOfInterest = {
    ".dynsym",      ".dynstr",   ".rela.dyn",     ".text", ".rodata",
    ".data.rel.ro", ".eh_frame", ".eh_frame_hdr", ".data", ".bss"};

struct InfoOptions {
  std::string lib;
  bool json = false;
  bool sha = false;
  bool scan_version = false;
};

struct Counts {
  uint64_t exports = 0, func = 0, object = 0, other = 0, weak = 0;
  uint64_t imports = 0;
  std::map<std::string, uint64_t> by_version, by_library;
};

Counts count(DriverImage& img) {
  Counts c;
  for (const auto& e : img.exports()) {
    ++c.exports;
    if (e.sym.type() == STT_FUNC || e.sym.type() == STT_GNU_IFUNC) {
      ++c.func;
    } else if (e.sym.type() == STT_OBJECT) {
      ++c.object;
    } else {
      ++c.other;
    }
    if (e.sym.binding() == STB_WEAK) ++c.weak;
  }
  for (const auto& i : img.imports()) {
    ++c.imports;
    ++c.by_version[i.version.empty() ? std::string("(unversioned)") : std::string(i.version)];
    ++c.by_library[i.library.empty() ? std::string("(unknown)") : std::string(i.library)];
  }
  return c;
}

const elf::SectionHeader* text_section(DriverImage& img) {
  return img.elf().section(".text");
}

// "file", "elf", "build_id", "soname", "needed".
void json_file_and_elf(JsonWriter& w, DriverImage& img, const InfoOptions& o) {
  const auto& elf = img.elf();
  const auto& h = elf.header();
  w.key("file").begin_object();
  w.kv("path", img.path()).kv("resolved_path", img.resolved_path()).kv("size", img.file().size());
  w.kv_or_null("compression", img.compression() == Compression::kNone
                                  ? std::string_view()
                                  : compression_name(img.compression()));
  if (o.sha) w.kv("sha256", sha256_hex(img.bytes()));
  w.end_object();
  w.key("elf").begin_object();
  w.kv("class", "ELF64").kv("data", "little-endian");
  w.kv("type", elf::file_type_name(h.e_type)).kv("machine", elf::machine_name(h.e_machine));
  w.kv("e_machine", h.e_machine).kv("osabi", h.ei_osabi).kv("abiversion", h.ei_abiversion);
  w.kv_hex("entry", h.e_entry).kv_hex("e_flags", h.e_flags);
  w.kv("section_count", elf.sections().size()).kv("segment_count", elf.segments().size());
  w.end_object();
  if (const auto& id = img.build_id())
    w.kv("build_id", *id);
  else
    w.key("build_id").null();
  const auto& dyn = img.dynamic();
  w.kv("soname", dyn.soname);
  w.key("needed").begin_array();
  for (auto n : dyn.needed) w.value(n);
  w.end_array();
}

// "driver_version": each source of the version and whether they agree.
void json_driver_version(JsonWriter& w, DriverImage& img, const InfoOptions& o) {
  const auto& v = img.driver_version(o.scan_version);
  w.key("driver_version").begin_object();
  if (auto b = v.best())
    w.kv("version", *b);
  else
    w.key("version").null();
  w.kv("source", v.source());
  if (v.from_file_name)
    w.kv("from_file_name", *v.from_file_name);
  else
    w.key("from_file_name").null();
  if (v.from_strings)
    w.kv("from_strings", *v.from_strings);
  else
    w.key("from_strings").null();
  w.kv("strings_scanned", v.strings_scanned);
  if (!v.strings_evidence.empty()) w.kv("strings_evidence", v.strings_evidence);
  w.kv("conflict", v.conflict());
  w.end_object();
}

// "exec_segment", "text", "sections_of_interest", "sections", "segments".
void json_layout(JsonWriter& w, DriverImage& img) {
  const auto& elf = img.elf();
  if (const auto* x = img.exec_segment()) {
    w.key("exec_segment").begin_object();
    w.kv("index", x->index).kv_hex("vaddr", x->p_vaddr).kv_hex("offset", x->p_offset);
    w.kv("filesz", x->p_filesz)
        .kv("memsz", x->p_memsz)
        .kv("flags", elf::segment_flags_string(x->p_flags));
    w.end_object();
  } else {
    w.key("exec_segment").null();
  }
  if (const auto* t = text_section(img)) {
    w.key("text").begin_object();
    w.kv_hex("start", t->sh_addr).kv_hex("end", t->sh_addr + t->sh_size).kv("size", t->sh_size);
    w.end_object();
  } else {
    w.key("text").null();
  }

  w.key("sections_of_interest").begin_object();
  for (auto name : kSectionsOfInterest) {
    w.key(name);
    if (const auto* s = elf.section(name)) {
      w.begin_object();
      w.kv("index", s->index).kv_hex("address", s->sh_addr).kv_hex("offset", s->sh_offset);
      w.kv("size", s->sh_size).kv("type", elf::section_type_name(s->sh_type));
      w.end_object();
    } else {
      w.null();
    }
  }
  w.end_object();
  w.key("sections").begin_array();
  for (const auto& s : elf.sections()) {
    w.begin_object();
    w.kv("index", s.index).kv("name", s.name).kv("type", elf::section_type_name(s.sh_type));
    w.kv_hex("address", s.sh_addr).kv_hex("offset", s.sh_offset).kv("size", s.sh_size);
    w.kv_hex("flags", s.sh_flags).kv("align", s.sh_addralign).kv("in_file", s.in_file);
    w.end_object();
  }
  w.end_array();
  w.key("segments").begin_array();
  for (const auto& p : elf.segments()) {
    w.begin_object();
    w.kv("index", p.index).kv("type", elf::segment_type_name(p.p_type));
    w.kv_hex("offset", p.p_offset).kv_hex("vaddr", p.p_vaddr).kv("filesz", p.p_filesz);
    w.kv("memsz", p.p_memsz)
        .kv("flags", elf::segment_flags_string(p.p_flags))
        .kv("align", p.p_align);
    w.end_object();
  }
  w.end_array();
}

// "exports" and "imports": the counts.
void json_counts(JsonWriter& w, const Counts& c) {
  w.key("exports").begin_object();
  w.kv("total", c.exports)
      .kv("func", c.func)
      .kv("object", c.object)
      .kv("other", c.other)
      .kv("weak", c.weak);
  w.end_object();
  w.key("imports").begin_object();
  w.kv("total", c.imports);
  w.key("by_version").begin_array();
  for (const auto& [k, n] : c.by_version)
    w.begin_object().kv("version", k).kv("count", n).end_object();
  w.end_array();
  w.key("by_library").begin_array();
  for (const auto& [k, n] : c.by_library)
    w.begin_object().kv("library", k).kv("count", n).end_object();
  w.end_array();
  w.end_object();
}

// "fwd_compat_note": present, damaged or absent.
void json_fwd_compat_note(JsonWriter& w, DriverImage& img) {
  const auto& note = img.fwd_compat_note();
  w.key("fwd_compat_note").begin_object();
  if (note) {
    w.kv("status", "present").kv("owner", note->owner).kv("note_type", note->note_type);
    if (note->format)
      w.kv("format", *note->format);
    else
      w.key("format").null();
    if (note->cuda_version)
      w.kv("cuda_version", *note->cuda_version);
    else
      w.key("cuda_version").null();
    w.key("driver_branches").begin_array();
    for (auto b : note->driver_branches) w.value(b);
    w.end_array();
    w.key("device_generations").begin_array();
    for (auto d : note->device_generations) w.value(d);
    w.end_array();
    w.key("other_keys").begin_array();
    for (const auto& k : note->other_keys) w.value(k);
    w.end_array();
    w.key("missing_keys").begin_array();
    for (const auto& k : note->missing_keys) w.value(k);
    w.end_array();
    w.kv("raw", note->raw_json);
  } else if (img.fwd_compat_error()) {
    w.kv("status", "damaged").kv("error", img.fwd_compat_error()->message());
  } else {
    w.kv("status", "absent");
  }
  w.end_object();
}

// "debuglink" and "eh_frame_hdr".
void json_unwind(JsonWriter& w, DriverImage& img) {
  if (const auto& d = img.debuglink()) {
    w.key("debuglink").begin_object().kv("file", d->file).kv_hex("crc32", d->crc32).end_object();
  } else {
    w.key("debuglink").null();
  }
  if (const auto& eh = img.eh_frame_hdr()) {
    w.key("eh_frame_hdr").begin_object();
    if (eh->fde_count)
      w.kv("fde_count", *eh->fde_count);
    else
      w.key("fde_count").null();
    w.kv_hex("eh_frame_ptr", eh->eh_frame_ptr).kv_hex("table_enc", eh->table_enc);
    w.kv_hex("fde_count_enc", eh->fde_count_enc).kv_hex("eh_frame_ptr_enc", eh->eh_frame_ptr_enc);
    w.end_object();
  } else {
    w.key("eh_frame_hdr").null();
  }
}

std::string render_json(DriverImage& img, const InfoOptions& o, const Counts& c) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.kv("schema", "cudatool.info/1");
  json_file_and_elf(w, img, o);
  json_driver_version(w, img, o);
  json_layout(w, img);
  json_counts(w, c);
  json_fwd_compat_note(w, img);
  json_unwind(w, img);
  write_diagnostics(w, img.diagnostics());
  w.end_object();
  w.finish();
  return out;
}

void text_row(std::string& out, std::string_view k, const std::string& v) {
  out += fmt::format("{:<16}{}\n", k, v);
}

// The "driver version" row: the version, where it comes from, whether the sources agree.
std::string text_driver_version(const DriverVersion& v) {
  if (auto b = v.best()) {
    std::string s = fmt::format("{} (from {}", *b, v.source());
    if (v.from_strings && v.from_file_name) {
      s += v.conflict() ? fmt::format("; the file name says {}!", *v.from_file_name)
                        : "; the file name agrees";
    } else if (!v.strings_scanned) {
      s += "; --scan-version also checks the strings inside";
    }
    return s + ")";
  }
  return v.strings_scanned ? "unknown (no version in the file name or strings)" : "unknown";
}

// The "fwd-compat note" rows.
void text_fwd_compat_note(std::string& out, DriverImage& img) {
  auto row = [&](std::string_view k, const std::string& v) { text_row(out, k, v); };
  const auto& note = img.fwd_compat_note();
  if (note) {
    std::string branches, devices;
    for (auto b : note->driver_branches)
      branches += fmt::format("{}{}", branches.empty() ? "" : " ", b);
    for (auto d : note->device_generations)
      devices += fmt::format("{}{}", devices.empty() ? "" : " ", d);
    row("fwd-compat note",
        fmt::format("format {}, CUDA {} (owner \"{}\", note type {})",
                    note->format ? fmt::format("{}", *note->format) : "?",
                    note->cuda_version.value_or("?"), note->owner, note->note_type));
    row("", fmt::format("kernel-driver branches: {}", branches.empty() ? "none" : branches));
    row("", fmt::format("device generations: {}", devices.empty() ? "none" : devices));
    auto key_list = [](const std::vector<std::string>& v) {
      std::string keys;
      for (const auto& k : v) keys += fmt::format("{}\"{}\"", keys.empty() ? "" : ", ", k);
      return keys;
    };
    if (!note->other_keys.empty()) row("", "other keys: " + key_list(note->other_keys));
    if (!note->missing_keys.empty()) row("", "missing keys: " + key_list(note->missing_keys));
  } else if (img.fwd_compat_error()) {
    row("fwd-compat note", fmt::format("damaged: {}", img.fwd_compat_error()->message()));
  } else {
    row("fwd-compat note", "absent");
  }
}

std::string render_text(DriverImage& img, const InfoOptions& o, const Counts& c) {
  const auto& elf = img.elf();
  const auto& h = elf.header();
  std::string out;
  auto row = [&](std::string_view k, const std::string& v) { text_row(out, k, v); };
  auto base = [](std::string_view p) { return p.substr(p.rfind('/') + 1); };
  row("file", base(img.path()) == base(img.resolved_path())
                  ? img.path()
                  : fmt::format("{} -> {}", img.path(), img.resolved_path()));
  row("size", fmt::format("{} bytes ({}){}", img.file().size(), human_size(img.file().size()),
                          img.compression() == Compression::kNone
                              ? ""
                              : fmt::format(", decompressed in memory from {}",
                                            compression_name(img.compression()))));
  if (o.sha) row("sha256", sha256_hex(img.bytes()));
  const auto& id = img.build_id();
  row("build id", id ? *id : "none");
  row("ELF",
      fmt::format("ELF64 little-endian {} {}, OS/ABI {}, entry {}", elf::file_type_name(h.e_type),
                  elf::machine_name(h.e_machine), h.ei_osabi, hex(h.e_entry)));
  const auto& dyn = img.dynamic();
  if (!dyn.soname.empty()) row("soname", std::string(dyn.soname));
  if (!dyn.needed.empty()) {
    std::string needed;
    for (auto n : dyn.needed) needed += fmt::format("{}{}", needed.empty() ? "" : " ", n);
    row("needed", needed);
  }
  row("driver version", text_driver_version(img.driver_version(o.scan_version)));
  if (const auto* x = img.exec_segment()) {
    row("exec segment", fmt::format("{} (LOAD [{}], {}, {} bytes)", hex(x->p_vaddr), x->index,
                                    elf::segment_flags_string(x->p_flags), x->p_filesz));
  } else {
    row("exec segment", "none");
  }
  if (const auto* t = text_section(img)) {
    row(".text", fmt::format("{}-{} ({} bytes, {})", hex(t->sh_addr), hex(t->sh_addr + t->sh_size),
                             t->sh_size, human_size(t->sh_size)));
  }
  text_fwd_compat_note(out, img);
  if (const auto& d = img.debuglink()) {
    row("debug link", fmt::format("{} (crc32 {:#010x})", d->file, d->crc32));
  } else {
    row("debug link", "none");
  }
  const auto& eh = img.eh_frame_hdr();
  row("FDEs", eh && eh->fde_count ? fmt::format("{} (from .eh_frame_hdr)", *eh->fde_count)
                                  : std::string("unknown (no .eh_frame_hdr table)"));
  row("exports", fmt::format("{} ({} FUNC, {} OBJECT{}{})", c.exports, c.func, c.object,
                             c.other ? fmt::format(", {} other", c.other) : "",
                             c.weak ? fmt::format("; {} weak", c.weak) : ""));
  // Largest groups first: "libc.so.6 186, libpthread.so.0 32, …".
  auto groups = [](const std::map<std::string, uint64_t>& m) {
    std::vector<std::pair<std::string, uint64_t>> v(m.begin(), m.end());
    std::stable_sort(v.begin(), v.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string s;
    for (const auto& [k, n] : v) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", k, n);
    return s;
  };
  row("imports", fmt::format("{}", c.imports));
  if (c.imports > 0) {
    row("  by library", groups(c.by_library));
    row("  by version", groups(c.by_version));
  }

  out += "\nsections of interest\n";
  TextTable t({"section", "address", "offset", "size", ""}, {false, true, true, true, false});
  for (auto name : kSectionsOfInterest) {
    if (const auto* s = elf.section(name)) {
      t.add({std::string(name), hex(s->sh_addr), hex(s->sh_offset), fmt::format("{}", s->sh_size),
             human_size(s->sh_size)});
    } else {
      t.add({std::string(name), "-", "-", "absent", ""});
    }
  }
  out += t.render("  ");
  return out;
}

int run_info(const InfoOptions& o) {
  auto img = open_library(o.lib);
  if (!img) return kExitBadInput;
  Counts c = count(*img);
  emit(o.json ? render_json(*img, o, c) : render_text(*img, o, c));
  return report_diagnostics(img->diagnostics());
}

}  // namespace

void register_info(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<InfoOptions>();
  auto* cmd =
      app.add_subcommand("info", "What this libcuda build is: identity, layout, note, counts");
  cmd->add_option("LIB", o->lib,
                  "libcuda build to read (default: the system's libcuda.so.1, found as the "
                  "dynamic loader would)");
  cmd->add_flag("--json", o->json, "print JSON (schema cudatool.info/1) instead of text");
  cmd->add_flag("--sha256", o->sha, "also hash the whole file (reads every byte; off by default)");
  cmd->add_flag("--scan-version", o->scan_version,
                "also read the driver version from the strings inside the library (automatic "
                "when the file name carries none)");
  cmd->footer(
      "Examples:\n"
      "  cudatool info                                  # the system's libcuda.so.1\n"
      "  cudatool info ~/.cache/cudatool/drivers/libcuda.so.550.163.01\n"
      "  cudatool info LIB --json | jq .fwd_compat_note\n"
      "Reports: file, size, GNU build id, ELF type/machine, driver version and its source, exec\n"
      "segment and .text range, sizes of the sections that matter, export/import counts,\n"
      "the .note.cuda.fwd_compatibility note (\"absent\" on drivers before 570), .gnu_debuglink\n"
      "and the FDE count of .eh_frame_hdr.");
  cmd->callback([o, exit_code] { *exit_code = run_info(*o); });
}

}  // namespace cudatool::cli
