// The tables of a Normalizer (handles, fds, mappings, addresses) and the walk of one buffer into
// its normalised image: members of a known layout by class (ab/rules.hpp), padding left out;
// buffers of unknown layout byte by byte, with words that hold a known handle or a user address
// renamed by value.
#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "ab/identity.hpp"
#include "ab/normalize_state.hpp"
#include "ab/rules.hpp"
#include "base/bytes.hpp"

namespace cudatool::ab {
namespace detail {

uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t x = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

uint64_t hash_bytes(const void* p, size_t n) {
  return XXH3_64bits(p, n);
}

}  // namespace detail

using detail::mix;

namespace {

constexpr int kMaxDepth = 4;

bool scalar_size(uint32_t n) {
  return n == 1 || n == 2 || n == 4 || n == 8;
}

uint64_t load(const uint8_t* p, uint32_t n) {
  switch (n) {
    case 1:
      return p[0];
    case 2:
      return load_le<uint16_t>(p);
    case 4:
      return load_le<uint32_t>(p);
    default:
      return load_le<uint64_t>(p);
  }
}

// One walk: the image being written and where its symbols go.
struct Walk {
  Normalizer::State& s;
  const uint8_t* raw;
  uint8_t* img;
  uint64_t limit;
  uint64_t covered = 0;
  uint64_t masked = 0;
  std::vector<uint8_t>& classes;  // per field index: MemberClass + 1, 0 unknown
  const rm::FieldEntry* field_base;
  // The structure whose members are being walked, and where it starts (a PCI location is read
  // from all its members).
  const rm::StructEntry* st_now = nullptr;
  uint64_t st_base = 0;

  MemberClass class_of(const rm::StructEntry& st, const rm::FieldEntry& m) {
    size_t i = static_cast<size_t>(&m - field_base);
    if (i < classes.size()) {
      if (classes[i] == 0) {
        classes[i] = static_cast<uint8_t>(classify_member(st.name, m, s.rules, s.identity)) + 1;
      }
      return static_cast<MemberClass>(classes[i] - 1);
    }
    return classify_member(st.name, m, s.rules, s.identity);
  }

  // The PCI location the identity members of the structure being walked hold together.
  std::optional<IdentityValue> pci_here() {
    if (st_now == nullptr) return std::nullopt;
    uint64_t part[4] = {};  // domain, bus, slot, function
    for (const rm::FieldEntry& f : s.t.fields(*st_now)) {
      const IdentityRow* r = find_identity_row(st_now->name, f.name);
      if (r == nullptr || r->kind != IdentityKind::kPciLocation || f.size != f.elem_size ||
          !scalar_size(f.size)) {
        continue;
      }
      uint64_t at = st_base + f.offset;
      if (at >= limit || f.size > limit - at) continue;
      size_t k = f.name == "domain" ? 0 : f.name == "bus" ? 1 : f.name == "slot" ? 2 : 3;
      part[k] = load(raw + at, f.size);
    }
    return identity_pci(part[0], part[1], part[2], part[3]);
  }

  // A scalar member of the identity table (ab/identity.cpp): its value named, unless it holds
  // none (0, an unused gpuId slot) — then it is compared as it is.
  bool identity_scalar_member(const detail::Place& where, uint64_t off, uint32_t w, uint64_t v) {
    const IdentityRow* row = find_identity_row(where.structure, where.member);
    if (row == nullptr) return false;
    std::optional<IdentityValue> val =
        row->kind == IdentityKind::kPciLocation ? pci_here() : identity_scalar(row->kind, v, w);
    if (!val) return false;
    subst(off, static_cast<uint8_t>(w), SymKind::kIdentity, s.identity_symbol(row->kind, *val), 0,
          v);
    ++s.out.masks.identities;
    return true;
  }

  // A byte-array member of the identity table (a UUID, a serial): the bytes of its value named,
  // the rest of the member compared as it is.
  bool identity_bytes_member(const rm::StructEntry& st, const rm::FieldEntry& m, uint64_t off) {
    const IdentityRow* row = find_identity_row(st.name, m.name);
    if (row == nullptr || off >= limit) return false;
    uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(m.size, limit - off));
    std::optional<IdentityValue> val = identity_bytes(row->kind, raw + off, n);
    if (!val || val->width == 0 || val->width > n || val->width > 0xff) return false;
    std::memcpy(img + off, raw + off, n);
    covered += n;
    uint64_t head = 0;
    std::memcpy(&head, raw + off, std::min<uint32_t>(8, val->width));
    subst(off, static_cast<uint8_t>(val->width), SymKind::kIdentity,
          s.identity_symbol(row->kind, *val), 0, head);
    ++s.out.masks.identities;
    return true;
  }

  void subst(uint64_t off, uint8_t width, SymKind kind, uint64_t base, uint64_t delta,
             uint64_t raw_value) {
    std::memset(img + off, 0, width);
    s.out.substs.push_back(Subst{static_cast<uint32_t>(off), width, kind, base, delta, raw_value});
  }

  void member(MemberClass c, uint64_t off, uint32_t w, const detail::Place& where) {
    covered += w;
    uint64_t v = load(raw + off, w);
    switch (c) {
      case MemberClass::kMasked:
        masked += w;
        return;  // the image is zero there
      case MemberClass::kHandle:
        if (v != 0) {
          subst(off, static_cast<uint8_t>(w), SymKind::kHandle,
                s.lookup_handle(static_cast<uint32_t>(v), where), 0, v);
          ++s.out.masks.handles;
          return;
        }
        break;
      case MemberClass::kFd:
        if (uint64_t sym = s.lookup_fd(static_cast<int32_t>(v), {})) {
          subst(off, static_cast<uint8_t>(w), SymKind::kFd, sym, 0, v);
          ++s.out.masks.fds;
          return;
        }
        break;
      case MemberClass::kPointer:
        if (v != 0) {
          auto [base, delta] = s.resolve_pointer(v, where);
          subst(off, static_cast<uint8_t>(w), SymKind::kPointer, base, delta, v);
          ++s.out.masks.pointers;
          return;
        }
        break;
      case MemberClass::kIdentity:
        if (identity_scalar_member(where, off, w, v)) return;
        break;
      case MemberClass::kLiteral:
        break;
    }
    std::memcpy(img + off, raw + off, w);
  }

  // Bytes compared as they are (a member recorded only in part, bytes, strings, unions).
  void literal(uint64_t off, uint64_t n, bool is_masked) {
    n = std::min(n, limit - off);
    if (!is_masked) std::memcpy(img + off, raw + off, n);
    covered += n;
    if (is_masked) masked += n;
  }

  void structure(const rm::StructEntry& st, uint64_t base, int depth) {
    for (const rm::FieldEntry& m : s.t.fields(st)) {
      uint64_t off = base + m.offset;
      if (off >= limit) continue;  // not recorded
      st_now = &st;
      st_base = base;
      if (m.size == m.elem_size && scalar_size(m.size)) {
        if (m.size <= limit - off) {
          member(class_of(st, m), off, m.size, detail::Place{st.name, m.name});
        } else {
          literal(off, m.size, class_of(st, m) == MemberClass::kMasked);
        }
        continue;
      }
      const rm::StructEntry* inner = s.layout(m.type);
      uint32_t n = m.elem_size ? m.size / m.elem_size : 0;
      if (inner != nullptr && depth < kMaxDepth &&
          m.elem_size == static_cast<uint32_t>(inner->size)) {
        for (uint32_t i = 0; i < n; ++i) {
          uint64_t e = off + uint64_t{i} * m.elem_size;
          if (e >= limit) break;
          structure(*inner, e, depth + 1);  // members past the recording are left out there
        }
      } else if (scalar_size(m.elem_size) && m.elem_size > 1) {
        MemberClass c = class_of(st, m);
        for (uint32_t i = 0; i < n; ++i) {
          uint64_t e = off + uint64_t{i} * m.elem_size;
          if (e >= limit) break;
          if (m.elem_size <= limit - e) {
            member(c, e, m.elem_size, detail::Place{st.name, m.name});
          } else {
            literal(e, m.elem_size, c == MemberClass::kMasked);
          }
        }
      } else {
        // Bytes, strings, unions: compared as they are (masked when a rule names them); a UUID
        // or a serial of the identity table named.
        MemberClass c = class_of(st, m);
        if (c == MemberClass::kIdentity && identity_bytes_member(st, m, off)) continue;
        literal(off, m.size, c == MemberClass::kMasked);
      }
    }
  }

  // Unknown layout: the bytes as they are, except aligned words that hold a user address (8
  // bytes) or a handle named in this trace (4 bytes).
  void unknown(uint64_t from, std::string_view role) {
    if (limit > from) std::memcpy(img + from, raw + from, limit - from);  // raw may be null if 0
    covered += limit - from;
    uint64_t off = (from + 3) & ~uint64_t{3};
    while (off + 4 <= limit) {
      if (off % 8 == 0 && off + 8 <= limit) {
        uint64_t v = load_le<uint64_t>(raw + off);
        if (v != 0 && s.looks_like_pointer(v)) {
          auto [base, delta] = s.resolve_pointer(v, detail::Place{{}, role, off, s.scope});
          subst(off, 8, SymKind::kPointer, base, delta, v);
          ++s.out.masks.pointers;
          off += 8;
          continue;
        }
      }
      uint32_t h = load_le<uint32_t>(raw + off);
      if (s.is_known_handle_value(h)) {
        subst(off, 4, SymKind::kHandle, s.lookup_handle(h, detail::Place{{}, role, off, s.scope}),
              0, h);
        ++s.out.masks.handles;
      }
      off += 4;
    }
  }
};

}  // namespace

void Normalizer::State::walk_buffer(NormBuffer& nb, const uint8_t* raw, uint32_t compared,
                                    const rm::StructEntry* layout, bool array) {
  nb.layout = layout;
  nb.array = array;
  nb.compared = compared;
  nb.bytes = out.bytes.size();
  nb.subst = out.substs.size();
  out.bytes.resize(out.bytes.size() + compared);  // zero-filled: masked and padding bytes stay 0
  const rm::FieldEntry* field_base = nullptr;
  if (!t.structs().empty()) {
    const rm::StructEntry& s0 = t.structs().front();
    field_base = t.fields(s0).data() - s0.first_field;
  }
  Walk w{*this, raw, out.bytes.data() + nb.bytes, compared, 0, 0, field_cache, field_base};
  if (layout == nullptr || layout->size <= 0) {
    w.unknown(0, role_name(nb.role));
  } else if (array) {
    uint64_t size = static_cast<uint64_t>(layout->size);
    uint64_t off = 0;
    for (; compared - off >= size; off += size) w.structure(*layout, off, 0);
    if (off < compared) w.unknown(off, role_name(nb.role));
  } else {
    w.structure(*layout, 0, 0);
    uint64_t size = static_cast<uint64_t>(layout->size);
    if (size < compared) w.unknown(size, role_name(nb.role));  // longer: the rest as bytes
  }
  out.masks.compared += w.covered - w.masked;
  out.masks.by_rule += w.masked;
  out.masks.padding += compared - std::min<uint64_t>(compared, w.covered);
  nb.subst_count = static_cast<uint32_t>(out.substs.size() - nb.subst);
}

}  // namespace cudatool::ab
