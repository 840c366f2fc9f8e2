#include "cuda/fwd_compat.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "elf/notes.hpp"

namespace cudatool::cuda {

Result<FwdCompatNote> parse_fwd_compat_json(std::string_view text) {
  FwdCompatNote n;
  // Descriptors are NUL-padded to the note alignment.
  while (!text.empty() && text.back() == '\0') text.remove_suffix(1);
  n.raw_json = std::string(text);
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return make_error(kFwdCompatSection, "descriptor", std::nullopt,
                      "descriptor is not valid JSON");
  }
  if (!j.is_object()) {
    return make_error(kFwdCompatSection, "descriptor", std::nullopt,
                      "descriptor is JSON but not an object");
  }
  auto int_list = [&](const nlohmann::json& v, const char* key,
                      std::vector<int64_t>& out) -> Status {
    if (!v.is_array()) {
      return make_error(kFwdCompatSection, key, std::nullopt, "is not an array");
    }
    for (const auto& e : v) {
      if (!e.is_number_integer()) {
        return make_error(kFwdCompatSection, key, std::nullopt, "holds a non-integer element");
      }
      out.push_back(e.get<int64_t>());
    }
    return {};
  };
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const auto& v = it.value();
    if (k == "Format") {
      if (!v.is_number_integer()) {
        return make_error(kFwdCompatSection, "Format", std::nullopt, "is not an integer");
      }
      n.format = v.get<int64_t>();
    } else if (k == "CUDA Version") {
      if (v.is_string()) {
        n.cuda_version = v.get<std::string>();
      } else if (v.is_number()) {
        n.cuda_version = v.dump();
      } else {
        return make_error(kFwdCompatSection, "CUDA Version", std::nullopt, "is not a string");
      }
    } else if (k == "Driver") {
      if (auto s = int_list(v, "Driver", n.driver_branches); !s) return s.error();
    } else if (k == "Device") {
      if (auto s = int_list(v, "Device", n.device_generations); !s) return s.error();
    } else {
      n.other_keys.push_back(k);
    }
  }
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
  auto parsed = parse_fwd_compat_json(note.desc.chars());
  if (!parsed) {
    Error e = std::move(parsed).take_error();
    e.offset = note.offset;
    return e;
  }
  parsed->owner = std::string(note.name);
  parsed->note_type = note.type;
  parsed->offset = note.offset;
  return std::optional<FwdCompatNote>(std::move(*parsed));
}

}  // namespace cudatool::cuda
