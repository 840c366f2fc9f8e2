#include "cli/xrefs_output.hpp"

#include <fmt/format.h>

#include <unordered_set>

namespace cudatool::cli {

std::string kind_label(const Ref& r) {
  std::string s(ref_kind_name(r.kind));
  if ((r.flags & Ref::kConditional) != 0) s += " (jcc)";
  if ((r.flags & Ref::kBranch) != 0) s += " (call/jmp *)";
  return s;
}

std::string site_owner(const XrefIndex& x, const DataNames& names, const Ref& r) {
  const FunctionMap& map = x.map();
  if (r.from >= 0) {
    const Function& f = map.functions()[static_cast<size_t>(r.from)];
    return fmt::format("{}+{:#x}", map.display_name(f), r.site - f.start);
  }
  AddressInfo a = describe_address(x, &names, r.site);
  std::string sec = a.section.empty() ? "(no section)" : std::string(a.section);
  if (r.kind != RefKind::kPointer) return fmt::format("{} (no function)", sec);
  return a.name.empty() ? sec : fmt::format("{} ({})", sec, a.name);
}

std::string quoted(std::string_view s, size_t max) {
  std::string out = "\"";
  size_t n = 0;
  for (char c : s) {
    if (n++ >= max) {
      out += "…";
      break;
    }
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

std::string target_text(const AddressInfo& a) {
  switch (a.kind) {
    case AddressInfo::Kind::kFunction:
      return a.offset == 0 ? a.name : fmt::format("{}+{:#x}", a.name, a.offset);
    case AddressInfo::Kind::kPlt:
      return a.name;
    case AddressInfo::Kind::kGot:
    case AddressInfo::Kind::kData:
      return a.section.empty() ? a.name : fmt::format("{} ({})", a.name, a.section);
    case AddressInfo::Kind::kString:
      return quoted(a.string->text);
    case AddressInfo::Kind::kNone:
      return a.section.empty() ? "(no section)"
                               : fmt::format("{}+{:#x}", a.section, a.section_offset);
  }
  return "?";
}

namespace {

void write_common(JsonWriter& w, const Ref& r) {
  w.kv_hex("site", r.site).kv("kind", ref_kind_name(r.kind));
  w.kv("conditional", (r.flags & Ref::kConditional) != 0);
  w.kv("branch", (r.flags & Ref::kBranch) != 0);
}

}  // namespace

void write_ref_to_json(JsonWriter& w, const XrefIndex& x, const DataNames& names, const Ref& r) {
  const FunctionMap& map = x.map();
  w.begin_object();
  write_common(w, r);
  AddressInfo a = describe_address(x, &names, r.site);
  if (r.from >= 0) {
    const Function& f = map.functions()[static_cast<size_t>(r.from)];
    w.kv("function", map.display_name(f)).kv_hex("function_start", f.start);
    w.kv("offset", r.site - f.start);
  } else {
    w.key("function").null().key("function_start").null().key("offset").null();
  }
  w.kv_or_null("section", a.section);
  w.kv_or_null("slot_name", r.from < 0 ? std::string_view(a.name) : std::string_view());
  w.end_object();
}

void write_ref_from_json(JsonWriter& w, const XrefIndex& x, const DataNames& names, const Ref& r) {
  w.begin_object();
  write_common(w, r);
  AddressInfo a = describe_address(x, &names, r.target);
  w.kv_hex("target", r.target).kv("target_kind", address_kind_name(a.kind));
  w.kv_or_null("target_name", a.name);
  if (a.kind == AddressInfo::Kind::kFunction)
    w.kv("target_offset", a.offset);
  else
    w.key("target_offset").null();
  w.kv_or_null("target_section", a.section);
  if (a.string != nullptr)
    w.kv("string", a.string->text);
  else
    w.key("string").null();
  w.end_object();
}

void write_xref_stats_json(JsonWriter& w, const XrefIndex& x) {
  const XrefStats& s = x.stats();
  w.key("stats").begin_object();
  w.kv("sections", s.sections).kv("code_bytes", s.code_bytes);
  w.kv("instructions", s.instructions).kv("undecodable_bytes", s.undecodable);
  w.key("references").begin_object();
  for (int k = 0; k < kRefKinds; ++k) w.kv(ref_kind_name(static_cast<RefKind>(k)), s.by_kind[k]);
  w.end_object();
  w.kv("plt_entries", s.plt_entries).kv("strings", s.strings);
  w.end_object();
}

size_t distinct_functions(const std::vector<const Ref*>& refs) {
  std::unordered_set<int32_t> s;
  for (const Ref* r : refs) {
    if (r->from >= 0) s.insert(r->from);
  }
  return s.size();
}

}  // namespace cudatool::cli
