#include "rm/decode_layout.hpp"

#include <algorithm>
#include <array>
#include <span>

#include "base/hex.hpp"

namespace cudatool::rm::detail {
namespace {

constexpr int kMaxDepth = 3;
constexpr size_t kMaxBytesShown = 64;

// Members whose meaning their name and type do not say (header comments do).
struct Override {
  std::string_view type;
  std::string_view member;
  ValueKind kind;  // of the member, or of each element for arrays
};
constexpr std::array kOverrides{
    Override{"NVOS54_PARAMETERS", "cmd", ValueKind::kControl},
    Override{"nv_ioctl_rm_api_version_t", "cmd", ValueKind::kChar},
    Override{"nv_ioctl_numa_info_t", "status", ValueKind::kSigned},  // NV_IOCTL_NUMA_STATUS_*
    Override{"nv_ioctl_set_numa_status_t", "status", ValueKind::kSigned},
    Override{"nv_ioctl_wait_open_complete_t", "rc", ValueKind::kSigned},
    Override{"nv_ioctl_wait_open_complete_t", "adapterStatus", ValueKind::kStatus},
    Override{"NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS", "classList", ValueKind::kClass},
    // The buffers behind these pointers hold class ids (embedded_param_copy.c).
    Override{"NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS", "classList", ValueKind::kClass},
    Override{"NV2080_CTRL_GPU_GET_ENGINE_CLASSLIST_PARAMS", "classList", ValueKind::kClass},
    Override{"NV906F_CTRL_GET_CLASS_ENGINEID_PARAMS", "classID", ValueKind::kClass},
    Override{"NV0000_CTRL_GPU_GET_ATTACHED_IDS_PARAMS", "gpuIds", ValueKind::kHex},
    Override{"NV0000_CTRL_GPU_GET_PROBED_IDS_PARAMS", "gpuIds", ValueKind::kHex},
    Override{"NV0000_CTRL_GPU_GET_PROBED_IDS_PARAMS", "excludedGpuIds", ValueKind::kHex},
    Override{"NV0000_CTRL_GPU_ATTACH_IDS_PARAMS", "gpuIds", ValueKind::kHex},
};

const Override* find_override(std::string_view type, std::string_view member) {
  for (const Override& o : kOverrides) {
    if (o.type == type && o.member == member) return &o;
  }
  return nullptr;
}

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

bool is_upper(char c) {
  return c >= 'A' && c <= 'Z';
}

// The kind of a scalar (or of each element of an array) from its name and declared type.
ValueKind scalar_kind(std::string_view name, std::string_view type, uint32_t size) {
  if (name == "hClass") return ValueKind::kClass;
  if (name.size() >= 2 && name[0] == 'h' && is_upper(name[1]) && size == 4) {
    return ValueKind::kHandle;
  }
  if ((name == "status" || name == "rmStatus" || name == "Status") && size == 4) {
    return ValueKind::kStatus;
  }
  if (type == "NvP64" || (!type.empty() && type.back() == '*')) return ValueKind::kHex;
  if (type == "NvBool") return ValueKind::kDec;
  if (type == "NvS8" || type == "NvS16" || type == "NvS32" || type == "NvS64" || type == "int" ||
      type == "int32_t" || type == "int64_t" || type == "long") {
    return ValueKind::kSigned;
  }
  if (contains(name, "ize") || contains(name, "ount") || contains(name, "num") ||
      contains(name, "ength") || contains(name, "Entries") || name == "fd" ||
      contains(name, "_fd") || contains(name, "Fd")) {
    return ValueKind::kDec;
  }
  return ValueKind::kHex;
}

bool is_text(std::string_view name, std::string_view type) {
  if (type == "char" || type == "NvS8") return true;
  return (type == "NvU8" || type == "uint8_t") &&
         (contains(name, "name") || contains(name, "Name") || contains(name, "String") ||
          contains(name, "string"));
}

std::string_view strip_suffix(std::string_view s, std::string_view suffix) {
  if (s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix) {
    return s.substr(0, s.size() - suffix.size());
  }
  return s;
}

// The sibling that counts the elements of array `name` ("gpuInfoList" → "gpuInfoListSize",
// "classList" → "numClasses", "engineList" → "engineCount").
const FieldEntry* count_sibling(std::span<const FieldEntry> members, std::string_view name) {
  std::string_view list_stem = strip_suffix(name, "List");      // "classList" → "class"
  std::string_view plural_stem = strip_suffix(list_stem, "s");  // "gpuIds" → "gpuId"
  for (const FieldEntry& m : members) {
    std::string_view n = m.name;
    if (m.size != m.elem_size || m.size > 8 || n == name) continue;
    if (n.size() > name.size() && n.substr(0, name.size()) == name &&
        (n.substr(name.size()) == "Size" || n.substr(name.size()) == "Count")) {
      return &m;
    }
    for (std::string_view stem : {list_stem, plural_stem}) {
      if (stem.empty()) continue;
      if (n.size() > stem.size() && n.substr(0, stem.size()) == stem &&
          (n.substr(stem.size()) == "Count" || n.substr(stem.size()) == "ListSize")) {
        return &m;
      }
      // "num" + Stem + "", "s" or "es": numClasses, numChannels, numEntries
      if (n.size() > 3 + stem.size() && n.substr(0, 3) == "num" &&
          n[3] == static_cast<char>(stem[0] & ~0x20) &&
          n.substr(4, stem.size() - 1) == stem.substr(1)) {
        std::string_view rest = n.substr(3 + stem.size());
        if (rest.empty() || rest == "s" || rest == "es") return &m;
      }
    }
  }
  return nullptr;
}

// The display kind of a member (of each element for arrays): the override, else by its name and
// type.
ValueKind member_kind_uncached(const StructEntry& s, const FieldEntry& m) {
  const Override* ov = find_override(s.name, m.name);
  return ov ? ov->kind : scalar_kind(m.name, m.type, m.elem_size);
}

// What decoding needs of one member besides its layout: its display kind (string tests on names
// and types cost more than reading the member) and the structure its type names, if any (a
// search by name).
struct MemberFacts {
  ValueKind kind = ValueKind::kHex;
  const StructEntry* inner = nullptr;
};

MemberFacts member_facts_uncached(const Tables& t, const StructEntry& s, const FieldEntry& m) {
  bool scalar = m.size == m.elem_size && (m.size == 1 || m.size == 2 || m.size == 4 || m.size == 8);
  return {member_kind_uncached(s, m), scalar ? nullptr : t.find_struct(m.type)};
}

// The members' facts of one branch's tables, by position in all_fields(), computed for every
// member when a structure of a generated branch is first decoded (tables a test built have none:
// each member is then looked at on its own). Looked up once per structure decoded, not per member.
class Facts {
 public:
  explicit Facts(const Tables& t) : t_(t) {
    static PerBranch<std::vector<MemberFacts>> cache;
    const auto* all = cache.of(t, [](const Tables& tables, std::vector<MemberFacts>& facts) {
      facts.resize(tables.all_fields().size());
      for (const StructEntry& s : tables.structs()) {
        for (const FieldEntry& m : tables.fields(s)) {
          facts[static_cast<size_t>(&m - tables.all_fields().data())] =
              member_facts_uncached(tables, s, m);
        }
      }
    });
    if (all != nullptr) all_ = *all;
  }
  MemberFacts of(const StructEntry& s, const FieldEntry& m) const {
    auto i = static_cast<size_t>(&m - t_.all_fields().data());
    if (&m >= t_.all_fields().data() && i < all_.size()) return all_[i];
    return member_facts_uncached(t_, s, m);
  }

 private:
  const Tables& t_;
  std::span<const MemberFacts> all_;
};

void add_scalar(std::vector<Field>& out, std::string_view name, ValueKind kind, uint64_t value) {
  Field& f = out.emplace_back();
  f.name = name;
  f.kind = kind;
  f.value = value;
}

void decode_array(const Tables& t, const StructEntry& s, const FieldEntry& m, MemberFacts facts,
                  ByteView bytes, std::vector<Field>& out, std::vector<std::string>& partial,
                  int depth) {
  Field f;
  f.name = m.name;
  ByteView body = bytes.clamp(m.offset, m.size);
  if (is_text(m.name, m.type)) {
    f.kind = ValueKind::kString;
    std::string_view chars = body.chars();
    f.text = std::string(chars.substr(0, std::min(chars.size(), chars.find('\0'))));
    out.push_back(std::move(f));
    return;
  }
  const StructEntry* elem_struct = facts.inner;
  bool scalar_elems = m.elem_size == 1 || m.elem_size == 2 || m.elem_size == 4 || m.elem_size == 8;
  if ((elem_struct == nullptr || depth >= kMaxDepth) && (!scalar_elems || m.elem_size == 1)) {
    f.kind = ValueKind::kBytes;
    append_hex(f.text, body.clamp(0, kMaxBytesShown));
    f.total = body.size();
    out.push_back(std::move(f));
    return;
  }
  f.kind = ValueKind::kList;
  uint64_t capacity = m.elem_size ? m.size / m.elem_size : 0;
  uint64_t count = capacity;
  bool counted = false;
  if (const FieldEntry* c = count_sibling(t.fields(s), m.name)) {
    count = std::min<uint64_t>(read_uint(bytes, c->offset, c->size), capacity);
    counted = true;
  }
  ValueKind kind = facts.kind;
  if (!counted && elem_struct == nullptr) {
    // No count: drop the unused tail (zeros, or all-ones "invalid id" fillers).
    uint64_t ones = m.elem_size >= 8 ? ~0ULL : (1ULL << (8 * m.elem_size)) - 1;
    while (count > 0) {
      uint64_t v = read_uint(body, (count - 1) * m.elem_size, m.elem_size);
      if (v != 0 && v != ones) break;
      --count;
    }
  }
  f.total = count;
  uint64_t keep = std::min<uint64_t>(count, kMaxListItems);
  f.items.reserve(keep);
  for (uint64_t i = 0; i < keep; ++i) {
    uint64_t off = i * m.elem_size;
    if (!body.contains(off, m.elem_size)) break;
    if (elem_struct != nullptr) {
      Field e;
      e.kind = ValueKind::kStruct;
      decode_struct(t, *elem_struct, *body.sub(off, m.elem_size), e.items, partial, m.name,
                    depth + 1);
      f.items.push_back(std::move(e));
    } else {
      add_scalar(f.items, {}, kind, read_uint(body, off, m.elem_size));
    }
  }
  out.push_back(std::move(f));
}

}  // namespace

void decode_struct(const Tables& t, const StructEntry& s, ByteView bytes, std::vector<Field>& out,
                   std::vector<std::string>& partial, std::string_view what, int depth) {
  size_t missing = 0;
  std::span<const FieldEntry> members = t.fields(s);
  out.reserve(out.size() + members.size());  // one allocation for a nested structure's members
  const Facts all_facts(t);
  for (const FieldEntry& m : members) {
    if (!bytes.contains(m.offset, m.size)) {
      ++missing;
      continue;
    }
    MemberFacts facts = all_facts.of(s, m);
    if (m.size != m.elem_size) {
      decode_array(t, s, m, facts, bytes, out, partial, depth);
      continue;
    }
    if (m.size == 1 || m.size == 2 || m.size == 4 || m.size == 8) {
      ValueKind kind = facts.kind;
      uint64_t v = read_uint(bytes, m.offset, m.size);
      if (kind == ValueKind::kSigned) {
        v = static_cast<uint64_t>(m.size == 8   ? static_cast<int64_t>(v)
                                  : m.size == 4 ? static_cast<int32_t>(v)
                                  : m.size == 2 ? static_cast<int16_t>(v)
                                                : static_cast<int8_t>(v));
      }
      add_scalar(out, m.name, kind, v);
      continue;
    }
    Field f;
    f.name = m.name;
    const StructEntry* inner = facts.inner;
    if (inner != nullptr && depth < kMaxDepth) {
      f.kind = ValueKind::kStruct;
      decode_struct(t, *inner, *bytes.sub(m.offset, m.size), f.items, partial, m.name, depth + 1);
    } else {
      f.kind = ValueKind::kBytes;
      append_hex(f.text, bytes.clamp(m.offset, std::min<uint64_t>(m.size, kMaxBytesShown)));
      f.total = m.size;
    }
    out.push_back(std::move(f));
  }
  if (missing > 0 && depth == 0) {
    partial.push_back(std::string(what) + ": " + std::to_string(bytes.size()) + " bytes, " +
                      std::string(s.name) + " is " + std::to_string(s.size) + "; " +
                      std::to_string(missing) + " member(s) not decoded");
  }
}

}  // namespace cudatool::rm::detail

namespace cudatool::rm {

ValueKind member_kind(std::string_view struct_name, const FieldEntry& m) {
  const detail::Override* ov = detail::find_override(struct_name, m.name);
  return ov ? ov->kind : detail::scalar_kind(m.name, m.type, m.elem_size);
}

}  // namespace cudatool::rm
