#include "rm/tables.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

namespace cudatool::rm {
namespace {

template <class T, class K, class Proj>
const T* bsearch_key(std::span<const T> table, const K& key, Proj proj) {
  auto it = std::lower_bound(table.begin(), table.end(), key,
                             [&](const T& e, const K& k) { return proj(e) < k; });
  if (it == table.end() || proj(*it) != key) return nullptr;
  return &*it;
}

// Leading integer of a version such as "580.159.04"; 0 when there is none.
int major_of(std::string_view v) {
  int out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p == v.data()) return 0;
  return out;
}

// The first "NNN.NN…" in a text (a bare version or a /proc/driver/nvidia/version line).
std::string_view find_version(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9' || (i > 0 && text[i - 1] >= '0' && text[i - 1] <= '9')) {
      continue;
    }
    size_t j = i;
    while (j < text.size() && text[j] >= '0' && text[j] <= '9') ++j;
    if (j - i >= 3 && j < text.size() && text[j] == '.') {
      size_t k = j;
      while (k < text.size() && (text[k] == '.' || (text[k] >= '0' && text[k] <= '9'))) ++k;
      return text.substr(i, k - i);
    }
    i = j;
  }
  return {};
}

// Structures by name, of a generated branch: decoding asks for the same structures again and
// again, and a binary search by name compares their long common prefixes (NV2080_CTRL_…) a dozen
// times.
// Hashed from the length and three words (first, middle, last): the names share long prefixes and
// suffixes (NV2080_CTRL_…_PARAMS), which the three words and the length tell apart well enough
// for a table of ~10k names, in a fraction of what hashing every byte cost (std::hash was 3% of
// `decode`).
struct NameHash {
  size_t operator()(std::string_view s) const {
    uint64_t a = 0, b = 0, c = 0;
    if (s.size() >= 8) {
      std::memcpy(&a, s.data(), 8);
      std::memcpy(&b, s.data() + s.size() / 2 - 4, 8);
      std::memcpy(&c, s.data() + s.size() - 8, 8);
    } else if (!s.empty()) {  // an empty view may be null: no memcpy from it
      std::memcpy(&a, s.data(), s.size());
    }
    uint64_t h = (a * 0x9e3779b97f4a7c15ULL) ^ (b * 0xc2b2ae3d27d4eb4fULL) ^
                 (c * 0x165667b19e3779f9ULL) ^ s.size();
    return static_cast<size_t>(h ^ (h >> 29));
  }
};
// Open addressing with linear probing in a power-of-two table at most half full: no division and
// no node to follow, unlike std::unordered_map.
class StructIndex {
 public:
  void build(std::span<const StructEntry> structs) {
    size_t n = 16;
    while (n < 2 * structs.size()) n <<= 1;
    slots_.assign(n, nullptr);
    mask_ = n - 1;
    for (const StructEntry& e : structs) {
      size_t i = slot_of(e.name);
      if (slots_[i] == nullptr) slots_[i] = &e;  // the first of equal names
    }
  }
  [[nodiscard]] const StructEntry* find(std::string_view name) const {
    return slots_[slot_of(name)];
  }

 private:
  // The slot that holds `name`, or the empty one where it would go.
  [[nodiscard]] size_t slot_of(std::string_view name) const {
    for (size_t i = NameHash{}(name)&mask_;; i = (i + 1) & mask_) {
      const StructEntry* e = slots_[i];
      if (e == nullptr || e->name == name) return i;
    }
  }

  std::vector<const StructEntry*> slots_;
  size_t mask_ = 0;
};

}  // namespace

int Tables::major() const {
  return major_of(d_.info->version);
}

const StatusEntry* Tables::find_status(uint32_t value) const {
  return bsearch_key(d_.status, value, [](const StatusEntry& e) { return e.value; });
}
const EscapeEntry* Tables::find_escape(uint32_t nr) const {
  return bsearch_key(d_.escapes, nr, [](const EscapeEntry& e) { return e.nr; });
}
const CtrlEntry* Tables::find_control(uint32_t id) const {
  return bsearch_key(d_.ctrl, id, [](const CtrlEntry& e) { return e.id; });
}
const CategoryEntry* Tables::find_category(uint32_t cmd) const {
  return bsearch_key(d_.categories, cmd >> 8, [](const CategoryEntry& e) { return e.id; });
}
const ClassEntry* Tables::find_class(uint32_t id) const {
  return bsearch_key(d_.classes, id, [](const ClassEntry& e) { return e.id; });
}
const UvmEntry* Tables::find_uvm(uint32_t nr) const {
  return bsearch_key(d_.uvm, nr, [](const UvmEntry& e) { return e.nr; });
}
const StructEntry* Tables::find_struct(std::string_view name) const {
  static PerBranch<StructIndex> index;
  const StructIndex* m =
      index.of(*this, [](const Tables& t, StructIndex& out) { out.build(t.structs()); });
  if (m != nullptr) return m->find(name);
  return bsearch_key(d_.structs, name,
                     [](const StructEntry& e) { return e.name; });  // tests' tables
}
std::span<const FieldEntry> Tables::fields(const StructEntry& s) const {
  if (s.first_field > d_.fields.size() || s.field_count > d_.fields.size() - s.first_field) {
    return {};
  }
  return d_.fields.subspan(s.first_field, s.field_count);
}
const FieldEntry* Tables::find_field(const StructEntry& s, std::string_view name) const {
  for (const FieldEntry& f : fields(s)) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::span<const PointerRule> Tables::find_pointer_rules(PointerKind kind, uint32_t key) const {
  auto k = std::pair{static_cast<uint32_t>(kind), key};
  auto proj = [](const PointerRule& r) { return std::pair{r.kind, r.key}; };
  auto lo = std::lower_bound(d_.pointers.begin(), d_.pointers.end(), k,
                             [&](const PointerRule& r, const auto& x) { return proj(r) < x; });
  auto hi = std::upper_bound(lo, d_.pointers.end(), k,
                             [&](const auto& x, const PointerRule& r) { return x < proj(r); });
  return {lo, hi};
}

const PointerRule* Tables::find_pointer_rule(PointerKind kind, uint32_t key,
                                             std::string_view role) const {
  for (const PointerRule& r : find_pointer_rules(kind, key)) {
    if (r.role == role) return &r;
    // "params.list[3].ptr" against "params.list[].ptr": the index is the only difference.
    size_t open = r.role.find("[]");
    if (open == std::string_view::npos || role.size() <= r.role.size() ||
        role.substr(0, open + 1) != r.role.substr(0, open + 1) ||
        !role.ends_with(r.role.substr(open + 1))) {
      continue;
    }
    std::string_view index = role.substr(open + 1, role.size() - r.role.size());
    if (!index.empty() && index.find_first_not_of("0123456789") == std::string_view::npos) {
      return &r;
    }
  }
  return nullptr;
}

BranchChoice choose_branch(std::string_view driver_version) {
  auto branches = all_branches();
  BranchChoice c;
  c.tables = &branches.back();
  c.driver_major = major_of(find_version(driver_version));
  if (c.driver_major == 0) return c;
  int best = -1;
  for (const Tables& t : branches) {
    int d = std::abs(t.major() - c.driver_major);
    if (best < 0 || d <= best) {  // `<=`: on a tie the later (newer) branch wins
      best = d;
      c.tables = &t;
    }
  }
  c.exact_major = best == 0;
  return c;
}

const Tables& tables_for_driver(std::string_view driver_version) {
  return *choose_branch(driver_version).tables;
}

const Tables* find_branch(std::string_view id_or_version) {
  for (const Tables& t : all_branches()) {
    if (t.info().id == id_or_version || t.info().version == id_or_version) return &t;
  }
  return nullptr;
}

}  // namespace cudatool::rm
