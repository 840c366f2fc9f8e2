#include "cuda/fwd_compat.hpp"

#include <fmt/format.h>

#include <charconv>
#include <nlohmann/json.hpp>

#include "elf/notes.hpp"

namespace cudatool::cuda {
namespace {

struct ListKey {
  const char* key;
  std::vector<int64_t> FwdCompatNote::*list;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<int64_t> decimal(std::string_view s) {
  int64_t v = 0;
  if (s.empty() || s.front() == '+' || s.front() == '-') return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// One list item written as text: "7" or the range "7..14" (both ends included).
Status append_item_text(std::string_view item, const std::string& where,
                        std::optional<uint64_t> offset, std::vector<int64_t>& out) {
  std::string_view t = trim(item);
  auto dots = t.find("..");
  if (dots == std::string_view::npos) {
    auto v = decimal(t);
    if (!v) {
      return make_error(kFwdCompatSection, where, offset,
                        fmt::format("\"{}\" is neither a number nor a range a..b", item));
    }
    out.push_back(*v);
    return {};
  }
  auto lo = decimal(trim(t.substr(0, dots))), hi = decimal(trim(t.substr(dots + 2)));
  if (!lo || !hi) {
    return make_error(kFwdCompatSection, where, offset,
                      fmt::format("range \"{}\" does not have the form a..b", item));
  }
  if (*hi < *lo) {
    return make_error(kFwdCompatSection, where, offset,
                      fmt::format("range \"{}\" runs backwards", item));
  }
  if (*hi - *lo >= kFwdCompatMaxRange) {
    return make_error(
        kFwdCompatSection, where, offset,
        fmt::format("range \"{}\" names more than {} members", item, kFwdCompatMaxRange));
  }
  for (int64_t v = *lo; v <= *hi; ++v) out.push_back(v);
  return {};
}

// A list as NVIDIA writes it ([535, 550, …]), with string elements that may be ranges
// ([1, 2, "7..14"]), or the whole list as one string ("1, 2, 7..14").
Status read_list(const nlohmann::json& v, const char* key, std::optional<uint64_t> offset,
                 std::vector<int64_t>& out) {
  auto text_items = [&](std::string_view s, const std::string& where) -> Status {
    size_t start = 0;
    while (true) {
      size_t comma = s.find(',', start);
      auto s1 = append_item_text(
          s.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start),
          where, offset, out);
      if (!s1) return s1;
      if (comma == std::string_view::npos) return {};
      start = comma + 1;
    }
  };
  if (v.is_string()) return text_items(v.get_ref<const std::string&>(), key);
  if (!v.is_array()) {
    return make_error(kFwdCompatSection, key, offset, "is neither a list nor a string");
  }
  size_t i = 0;
  for (const auto& e : v) {
    std::string where = fmt::format("{}[{}]", key, i++);
    if (e.is_number_unsigned()) {
      auto u = e.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) {
        return make_error(kFwdCompatSection, where, offset, "does not fit 63 bits");
      }
      out.push_back(static_cast<int64_t>(u));
    } else if (e.is_number_integer()) {
      out.push_back(e.get<int64_t>());
    } else if (e.is_string()) {
      if (auto s = append_item_text(e.get_ref<const std::string&>(), where, offset, out); !s)
        return s;
    } else {
      return make_error(kFwdCompatSection, where, offset,
                        "is neither an integer nor a range string such as \"7..14\"");
    }
  }
  return {};
}

}  // namespace

Result<FwdCompatNote> parse_fwd_compat_json(std::string_view text, std::optional<uint64_t> offset) {
  FwdCompatNote n;
  // The descriptor ends in a NUL (580.159.04) and may be padded with more.
  while (!text.empty() && text.back() == '\0') text.remove_suffix(1);
  n.raw_json = std::string(text);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte counts from 1; it may point one past the end for a truncated text.
    std::optional<uint64_t> at = offset;
    if (at && e.byte >= 1) *at += std::min<uint64_t>(e.byte - 1, text.size());
    return make_error(
        kFwdCompatSection, "descriptor", at,
        fmt::format("descriptor is not valid JSON (byte {} of {})", e.byte, text.size()));
  } catch (const nlohmann::json::exception& e) {
    // A number past the range of a double (out_of_range 406), and the like: the parser says no
    // byte.
    return make_error(kFwdCompatSection, "descriptor", offset,
                      fmt::format("descriptor is not valid JSON ({})", e.what()));
  }
  if (!j.is_object()) {
    return make_error(kFwdCompatSection, "descriptor", offset,
                      "descriptor is JSON but not an object");
  }
  bool seen[4] = {false, false, false, false};
  const ListKey lists[] = {{kFwdCompatDriverKey, &FwdCompatNote::driver_branches},
                           {kFwdCompatDeviceKey, &FwdCompatNote::device_generations}};
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const auto& v = it.value();
    if (k == kFwdCompatFormatKey) {
      seen[0] = true;
      if (!v.is_number_integer()) {
        return make_error(kFwdCompatSection, k, offset, "is not an integer");
      }
      n.format = v.get<int64_t>();
    } else if (k == kFwdCompatCudaVersionKey) {
      seen[1] = true;
      if (v.is_string()) {
        n.cuda_version = v.get<std::string>();
      } else if (v.is_number()) {
        n.cuda_version = v.dump();
      } else {
        return make_error(kFwdCompatSection, k, offset, "is neither a string nor a number");
      }
    } else if (k == lists[0].key || k == lists[1].key) {
      size_t which = k == lists[0].key ? 0 : 1;
      seen[2 + which] = true;
      if (auto s = read_list(v, lists[which].key, offset, n.*(lists[which].list)); !s)
        return s.error();
    } else {
      n.other_keys.push_back(k);
    }
  }
  const char* keys[] = {kFwdCompatFormatKey, kFwdCompatCudaVersionKey, kFwdCompatDriverKey,
                        kFwdCompatDeviceKey};
  for (size_t i = 0; i < 4; ++i)
    if (!seen[i]) n.missing_keys.emplace_back(keys[i]);
  return n;
}

Result<std::optional<FwdCompatNote>> read_fwd_compat_note(const elf::ElfImage& elf) {
  const elf::SectionHeader* sh = elf.section(kFwdCompatSection);
  if (sh == nullptr) return std::optional<FwdCompatNote>{};
  Diagnostics local;
  auto notes = elf::read_section_notes(elf, *sh, &local);
  if (!notes) return notes.error();
  if (!local.empty()) return local.items().front();
  if (notes->empty()) {
    return make_error(elf::describe(*sh), "", sh->sh_offset, "section holds no note");
  }
  const elf::Note& note = notes->front();
  auto parsed = parse_fwd_compat_json(note.desc.chars(), note.desc.base());
  if (!parsed) return std::move(parsed).take_error();
  parsed->owner = std::string(note.name);
  parsed->note_type = note.type;
  parsed->offset = note.offset;
  return std::optional<FwdCompatNote>(std::move(*parsed));
}

}  // namespace cudatool::cuda
