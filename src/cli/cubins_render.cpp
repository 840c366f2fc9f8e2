#include "cli/cubins_render.hpp"

#include <fmt/format.h>

#include "base/json_writer.hpp"
#include "cli/common.hpp"
#include "cuda/cubin_arch.hpp"
#include "elf/relocations.hpp"
#include "elf/symbols.hpp"

namespace cudatool::cli {
namespace {

template <class T>
void opt(JsonWriter& w, std::string_view k, const std::optional<T>& v) {
  w.key(k);
  if (v) {
    w.value(*v);
  } else {
    w.null();
  }
}

void opt_str(JsonWriter& w, std::string_view k, std::string_view v) {
  w.key(k);
  if (v.empty()) {
    w.null();
  } else {
    w.value(v);
  }
}

void triple(JsonWriter& w, std::string_view k, const std::optional<std::array<uint32_t, 3>>& v) {
  w.key(k);
  if (!v) {
    w.null();
    return;
  }
  w.begin_array();
  for (auto x : *v) w.value(x);
  w.end_array();
}

void write_kernel(JsonWriter& w, const cuda::Kernel& k) {
  w.begin_object();
  w.kv("name", k.name).kv("entry", k.entry).kv("section", k.section);
  w.kv("symbol_index", k.symbol_index).kv("size", k.size);
  w.kv("binding", elf::symbol_binding_name(k.binding));
  opt(w, "registers", k.registers);
  opt_str(w, "registers_source", k.registers_source);
  opt(w, "sh_info_registers", k.sh_info_registers);
  opt(w, "frame_size", k.frame_size);
  opt(w, "min_stack_size", k.min_stack_size);
  opt(w, "max_stack_size", k.max_stack_size);
  opt(w, "crs_stack_size", k.crs_stack_size);
  opt(w, "maxreg_count", k.maxreg_count);
  opt(w, "cuda_api_version", k.cuda_api_version);
  opt(w, "param_size", k.param_size);
  w.key("param_cbank_offset");
  if (k.param_cbank_offset) {
    w.hex(*k.param_cbank_offset);
  } else {
    w.null();
  }
  w.key("params").begin_array();
  for (const auto& p : k.params) {
    w.begin_object();
    w.kv("ordinal", p.ordinal).kv_hex("offset", p.offset).kv("size", p.size);
    w.kv("log_alignment", p.log_alignment).kv("space", p.space).kv("in_cbank", p.in_cbank);
    w.end_object();
  }
  w.end_array();
  triple(w, "max_threads", k.max_threads);
  triple(w, "reqntid", k.reqntid);
  opt(w, "shared_size", k.shared_size);
  opt(w, "constant0_size", k.constant0_size);
  w.key("other_attributes").begin_array();
  for (auto a : k.other_attributes) w.value(cuda::eiattr_name(a));
  w.end_array();
  w.end_object();
}

void write_elf(JsonWriter& w, const cuda::Cubin& c) {
  const auto& h = c.elf.header();
  const auto& t = c.target;
  w.begin_object();
  w.kv("abi_version", h.ei_abiversion).kv("osabi", h.ei_osabi);
  w.kv("type", elf::file_type_name(h.e_type)).kv_hex("e_flags", h.e_flags);
  w.kv("e_version", h.e_version);
  w.kv("sm", t.sm).kv("arch", t.arch).kv("arch_evidence", t.arch_evidence);
  opt_str(w, "virtual_arch", t.virtual_arch);
  opt_str(w, "virtual_evidence", t.virtual_evidence);
  opt(w, "address_bits", t.address_bits);
  opt_str(w, "address_evidence", t.address_evidence);
  w.key("flags").begin_array();
  for (const auto& f : t.flag_names) w.value(f);
  w.end_array();
  w.kv_hex("unknown_flag_bits", t.unknown_flag_bits);
  w.key("toolkit_version");
  if (t.toolkit_version) {
    w.value(cuda::toolkit_version_string(*t.toolkit_version));
  } else {
    w.null();
  }
  opt_str(w, "toolkit_evidence", t.toolkit_evidence);
  w.key("tkinfo");
  if (t.tkinfo) {
    w.begin_object();
    w.kv("tool_name", t.tkinfo->tool_name).kv("tool_version", t.tkinfo->tool_version);
    w.kv("tool_branch", t.tkinfo->tool_branch).kv("tool_options", t.tkinfo->tool_options);
    w.kv("object_name", t.tkinfo->object_name);
    w.end_object();
  } else {
    w.null();
  }
  w.kv("nv_info_records", c.nv_info_records);
  w.key("sections").begin_array();
  for (const auto& s : c.elf.sections()) {
    w.begin_object();
    w.kv("index", s.index).kv("name", s.name).kv("type", cuda::cuda_section_type_name(s.sh_type));
    w.kv_hex("offset", s.sh_offset).kv("size", s.sh_size).kv_hex("flags", s.sh_flags);
    w.kv_hex("info", s.sh_info).kv("link", s.sh_link).kv("align", s.sh_addralign);
    w.end_object();
  }
  w.end_array();
  w.key("kernels").begin_array();
  for (const auto& k : c.kernels) write_kernel(w, k);
  w.end_array();
  w.key("global_attributes").begin_array();
  for (auto a : c.global_attributes) w.value(cuda::eiattr_name(a));
  w.end_array();
  w.key("other_symbol_attributes").begin_array();
  for (const auto& a : c.other_symbol_attributes) {
    w.begin_object().kv("symbol", a.symbol).kv("attribute", cuda::eiattr_name(a.attr));
    w.kv("value", a.value).end_object();
  }
  w.end_array();
  w.end_object();
}

void write_image(JsonWriter& w, const EmbeddedImage& im, const CubinsView& v) {
  w.begin_object();
  w.kv("index", im.index).kv("kind", image_kind_name(im.kind));
  w.kv_hex("offset", im.offset);
  w.key("vaddr");
  if (im.vaddr) {
    w.hex(*im.vaddr);
  } else {
    w.null();
  }
  w.kv("size", im.size).kv("content_size", im.content_size);
  opt_str(w, "section", im.section);
  opt_str(w, "arch", im.arch);
  opt(w, "container", im.container);
  opt(w, "entry_index", im.entry_index);
  w.kv("compression", cuda::compression_name(im.compression));
  w.key("fatbin_entry");
  if (im.container) {
    w.begin_object();
    w.kv("sm", im.entry_sm).kv_hex("flags", im.entry_flags);
    w.kv("version", fmt::format("{}.{}", im.entry_version_major, im.entry_version_minor));
    opt_str(w, "name", im.entry_name);
    w.end_object();
  } else {
    w.null();
  }
  w.key("fatbin");
  if (im.kind == ImageKind::kFatbin) {
    w.begin_object().kv("version", im.fatbin_version).kv("entries", im.fatbin_entries).end_object();
  } else {
    w.null();
  }
  w.key("elf");
  if (im.cubin) {
    write_elf(w, *im.cubin);
  } else {
    w.null();
  }
  w.key("references").begin_array();
  for (const auto& r : im.refs) {
    w.begin_object();
    w.kv_hex("slot", r.slot);
    opt_str(w, "section", r.section);
    w.kv("relocation", elf::x86_64_reloc_name(r.reloc_type));
    opt(w, "size_field", r.size_field);
    w.key("name_field");
    if (r.name_field) {
      w.value(*r.name_field);
    } else {
      w.null();
    }
    w.end_object();
  }
  w.end_array();
  w.key("error");
  if (im.error) {
    w.value(im.error->message());
  } else {
    w.null();
  }
  w.key("problems").begin_array();
  for (const auto& p : im.problems) w.value(p.message());
  w.end_array();
  if (!v.files.empty()) {
    auto it = v.files.find(im.index);
    w.key("file");
    if (it != v.files.end()) {
      w.value(it->second);
    } else {
      w.null();
    }
  }
  w.end_object();
}

std::string kernel_line(const cuda::Kernel& k) {
  std::string s = fmt::format("{} {}", k.entry ? "kernel" : "function", k.name);
  std::vector<std::string> parts;
  if (k.registers) parts.push_back(fmt::format("{} regs", *k.registers));
  if (k.param_size) {
    parts.push_back(fmt::format("params {} B ({})", *k.param_size, k.params.size()));
  }
  if (!k.params.empty()) {
    std::string sizes;
    for (const auto& p : k.params) sizes += fmt::format("{}{}", sizes.empty() ? "" : ",", p.size);
    parts.push_back(fmt::format("sizes [{}]", sizes));
  }
  if (k.frame_size) parts.push_back(fmt::format("frame {}", *k.frame_size));
  if (k.min_stack_size) parts.push_back(fmt::format("stack {}", *k.min_stack_size));
  if (k.shared_size) parts.push_back(fmt::format("shared {}", *k.shared_size));
  parts.push_back(fmt::format("{} B SASS", k.size));
  for (size_t i = 0; i < parts.size(); ++i) s += (i == 0 ? ": " : ", ") + parts[i];
  return s;
}

}  // namespace

std::vector<SummaryRow> summarize(const std::vector<const EmbeddedImage*>& images) {
  // Architectures in numeric order (sm_90a before sm_100), then kinds.
  auto arch_then_kind = [](const std::pair<std::string, std::string>& x,
                           const std::pair<std::string, std::string>& y) {
    if (x.first != y.first) return cuda::arch_less(x.first, y.first);
    return x.second < y.second;
  };
  std::map<std::pair<std::string, std::string>, SummaryRow, decltype(arch_then_kind)> rows(
      arch_then_kind);
  for (const auto* im : images) {
    std::string arch = im->arch.empty() ? "-" : im->arch;
    std::string kind(image_kind_name(im->kind));
    auto& r = rows[{arch, kind}];
    r.arch = arch;
    r.kind = kind;
    ++r.images;
    r.bytes += im->size;
    if (im->cubin) r.kernels += im->cubin->kernels.size();
  }
  std::vector<SummaryRow> out;
  for (auto& [k, r] : rows) out.push_back(r);
  return out;
}

std::string render_cubins_json(const CubinsView& v) {
  std::string out;
  JsonWriter w(out);
  const auto& s = *v.scan;
  w.begin_object();
  w.kv("schema", "cudatool.cubins/1");
  w.kv("file", v.path).kv("file_size", v.file_size);
  opt_str(w, "arch_filter", v.arch_filter);
  uint64_t top = 0;
  for (const auto& im : s.images()) top += im.container ? 0 : 1;
  w.kv("image_count", s.images().size()).kv("top_level_images", top);
  w.kv("total_bytes", s.total_bytes()).kv("damaged_images", s.damaged());
  w.kv("elf_magic_hits", s.elf_magic_hits()).kv("fatbin_magic_hits", s.fatbin_magic_hits());
  w.key("images").begin_array();
  for (const auto* im : v.shown) write_image(w, *im, v);
  w.end_array();
  w.key("rejected").begin_array();
  for (const auto& r : s.rejected()) {
    w.begin_object();
    w.kv_hex("offset", r.offset);
    opt_str(w, "section", r.section);
    w.kv("magic", r.magic).kv("verdict", r.verdict).kv("reason", r.reason);
    opt(w, "size", r.size);
    w.end_object();
  }
  w.end_array();
  w.key("diagnostics").begin_array();
  if (v.diag != nullptr) {
    for (const auto& e : v.diag->items()) w.value(e.message());
  }
  w.end_array();
  w.end_object();
  w.finish();
  return out;
}

std::string render_summary_json(const CubinsView& v) {
  std::string out;
  JsonWriter w(out);
  const auto& s = *v.scan;
  w.begin_object();
  w.kv("schema", "cudatool.cubins-summary/1");
  w.kv("file", v.path).kv("file_size", v.file_size);
  opt_str(w, "arch_filter", v.arch_filter);
  w.kv("image_count", v.shown.size()).kv("total_bytes", s.total_bytes());
  w.kv("damaged_images", s.damaged());
  w.key("by_arch").begin_array();
  for (const auto& r : summarize(v.shown)) {
    w.begin_object();
    w.kv("arch", r.arch).kv("kind", r.kind).kv("images", r.images).kv("bytes", r.bytes);
    w.kv("kernels", r.kernels);
    w.end_object();
  }
  w.end_array();
  w.key("rejected_by_verdict").begin_object();
  std::map<std::string, uint64_t> verdicts;
  for (const auto& r : s.rejected()) ++verdicts[fmt::format("{} {}", r.magic, r.verdict)];
  for (const auto& [k, n] : verdicts) w.kv(k, n);
  w.end_object();
  w.end_object();
  w.finish();
  return out;
}

std::string render_summary_text(const CubinsView& v) {
  const auto& s = *v.scan;
  std::string out = fmt::format(
      "{}: {} embedded GPU images{}, {} bytes ({}) of device code in "
      "a {}-byte file\n\n",
      v.path, v.shown.size(), v.arch_filter.empty() ? "" : fmt::format(" for {}", v.arch_filter),
      s.total_bytes(), human_size(s.total_bytes()), v.file_size);
  TextTable t({"arch", "kind", "images", "bytes", "kernels"}, {false, false, true, true, true});
  uint64_t n = 0, b = 0, k = 0;
  for (const auto& r : summarize(v.shown)) {
    t.add({r.arch, r.kind, fmt::format("{}", r.images), fmt::format("{}", r.bytes),
           fmt::format("{}", r.kernels)});
    n += r.images;
    // Entries lie inside their containers: count the bytes of the file once.
    if (r.kind == "cuda-elf" || r.kind == "fatbin") b += r.bytes;
    k += r.kernels;
  }
  t.add({"total", "", fmt::format("{}", n), fmt::format("{}", b), fmt::format("{}", k)});
  out += t.render("  ");
  if (s.damaged() > 0)
    out += fmt::format("\n{} images could not be decoded in full\n", s.damaged());
  return out;
}

std::string render_cubins_text(const CubinsView& v, bool kernels, bool sections, bool rejected) {
  const auto& s = *v.scan;
  std::map<std::string, uint64_t> verdicts;
  for (const auto& r : s.rejected())
    ++verdicts[fmt::format("{} {}", r.verdict, r.magic == "elf" ? "(\\x7fELF)" : "(fatbin magic)")];
  uint64_t raw = 0, containers = 0, entries = 0;
  for (const auto& im : s.images()) {
    raw += im.kind == ImageKind::kCudaElf ? 1 : 0;
    containers += im.kind == ImageKind::kFatbin ? 1 : 0;
    entries += im.container ? 1 : 0;
  }
  std::string out = fmt::format(
      "{}: {} CUDA ELF images, {} fatbin containers with {} entries; {} bytes ({}) of device code "
      "in a {}-byte file\n",
      v.path, raw, containers, entries, s.total_bytes(), human_size(s.total_bytes()), v.file_size);
  out += fmt::format("magic hits: {} \\x7fELF, {} fatbin; not images:", s.elf_magic_hits(),
                     s.fatbin_magic_hits());
  if (verdicts.empty()) out += " none";
  bool first = true;
  for (const auto& [k, n] : verdicts) {
    out += fmt::format("{} {} {}", first ? "" : ",", n, k);
    first = false;
  }
  out += rejected || verdicts.empty() ? "\n" : " (--rejected lists them)\n";
  if (!v.arch_filter.empty()) {
    out += fmt::format("showing {} images for {}\n", v.shown.size(), v.arch_filter);
  }
  out += "\n";
  TextTable t({"#", "offset", "vaddr", "size", "kind", "arch", "virtual", "abi", "toolkit",
               "kernels", "referenced from"},
              {true, true, true, true, false, false, false, true, false, true, false});
  for (const auto* im : v.shown) {
    std::string virt = "-", abi = "-", tk = "-", nk = "-", ref = "-";
    if (im->cubin) {
      const auto& tg = im->cubin->target;
      if (!tg.virtual_arch.empty()) virt = tg.virtual_arch;
      abi = fmt::format("{}", tg.abi_version);
      if (tg.toolkit_version) tk = cuda::toolkit_version_string(*tg.toolkit_version);
      nk = fmt::format("{}", im->cubin->kernels.size());
    }
    if (!im->refs.empty()) {
      ref = fmt::format("{} {}", hex(im->refs[0].slot), im->refs[0].section);
      if (im->refs.size() > 1) ref += fmt::format(" (+{})", im->refs.size() - 1);
    }
    std::string kind(image_kind_name(im->kind));
    if (im->compression != cuda::Compression::kNone) {
      kind += fmt::format(" ({})", cuda::compression_name(im->compression));
    }
    std::string idx = im->container ? fmt::format("{}.{}", *im->container, *im->entry_index)
                                    : fmt::format("{}", im->index);
    t.add({idx, hex(im->offset), im->vaddr ? hex(*im->vaddr) : "-", fmt::format("{}", im->size),
           kind, im->arch.empty() ? "-" : im->arch, virt, abi, tk, nk, ref});
  }
  out += t.render();
  // Details and errors after the table, per image.
  for (const auto* im : v.shown) {
    bool details = im->cubin && (kernels || sections);
    if (!details && !im->error && im->problems.empty()) continue;
    out += fmt::format("\nimage {} at {} ({}, {}):\n", im->index, hex(im->offset),
                       image_kind_name(im->kind), im->arch.empty() ? "-" : im->arch);
    if (im->error) out += fmt::format("  error: {}\n", im->error->message());
    for (const auto& p : im->problems) out += fmt::format("  problem: {}\n", p.message());
    if (!im->cubin) continue;
    const auto& tg = im->cubin->target;
    if (details) {
      std::string flags;
      for (const auto& f : tg.flag_names) flags += fmt::format("{}{}", flags.empty() ? "" : " ", f);
      out += fmt::format("  e_flags {:#x} (ABI {}): {} [{}]{}\n", tg.e_flags, tg.abi_version,
                         tg.arch, tg.arch_evidence, flags.empty() ? "" : "; " + flags);
    }
    if (sections) {
      TextTable st({"[#]", "name", "type", "offset", "size", "flags"},
                   {true, false, false, true, true, true});
      for (const auto& sec : im->cubin->elf.sections()) {
        if (sec.index == 0) continue;
        st.add({fmt::format("{}", sec.index), std::string(sec.name),
                cuda::cuda_section_type_name(sec.sh_type), hex(sec.sh_offset),
                fmt::format("{}", sec.sh_size), hex(sec.sh_flags)});
      }
      out += st.render("    ");
    }
    if (kernels) {
      for (const auto& k : im->cubin->kernels) out += "    " + kernel_line(k) + "\n";
    }
  }
  if (rejected && !s.rejected().empty()) {
    out += "\nmagic hits that are not GPU images\n";
    TextTable rt({"offset", "section", "magic", "verdict", "reason"},
                 {true, false, false, false, false});
    for (const auto& r : s.rejected()) {
      rt.add({hex(r.offset), r.section.empty() ? "-" : std::string(r.section), std::string(r.magic),
              r.verdict, r.reason});
    }
    out += rt.render("  ");
  }
  return out;
}

}  // namespace cudatool::cli
