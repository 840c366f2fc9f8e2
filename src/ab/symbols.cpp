// The names a Normalizer gives: RM clients and objects, handles never created, fds, device
// mappings and addresses. A name's id is a hash of its definition, chosen so that an inserted or
// missing call renames as little as possible of what follows it:
//
//   client   c<k>, k-th client created
//   object   id (parent, class, creation parameters, ordinal among equal ones);
//            shown parent/<class hex>#<ordinal among the class under that parent>
//   unknown  id (place of first use, ordinal there); shown ?<member>#k
//   fd       id (path, open flags, ordinal among equal opens); shown <path>#<ordinal of path>
//   mapping  id (fd, len, prot, flags, offset, ordinal among equal ones); shown map<k>@<fd>
//   address  id (place of first appearance, ordinal there); shown va:<member>#k
//   identity id (kind, ordinal among the values of that kind); shown gpu#k, gpu#k.pci …
#include <cstdio>

#include "ab/normalize_state.hpp"

namespace cudatool::ab {

using detail::mix;

namespace detail {

uint64_t place_hash(const Place& p) {
  uint64_t h = mix(p.scope, hash_bytes(p.structure.data(), p.structure.size()));
  h = mix(h, hash_bytes(p.member.data(), p.member.size()));
  return mix(h, p.offset);
}

std::string place_label(const Place& p) {
  std::string s(p.member.empty() ? std::string_view("?") : p.member);
  if (p.offset != UINT64_MAX) {
    char buf[24];
    snprintf(buf, sizeof buf, "+0x%llx", static_cast<unsigned long long>(p.offset));
    s += buf;
  }
  return s;
}

}  // namespace detail

namespace {

using detail::kMinValueHandle;

std::string hex(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

uint32_t Normalizer::State::thread_of(int32_t pid, int32_t tid) {
  auto [it, inserted] = threads.try_emplace(tid, static_cast<uint32_t>(threads.size()));
  if (inserted) {
    out.thread_tids.push_back(tid);
    out.thread_pids.push_back(pid);
  }
  return it->second;
}

void Normalizer::State::set_name(uint64_t sym, std::string name) {
  out.names[sym] = std::move(name);
}

const std::string& Normalizer::State::name_of(uint64_t sym) {
  return out.names[sym];
}

uint64_t Normalizer::State::client_symbol(uint32_t raw, const detail::Place& where) {
  if (auto it = clients.find(raw); it != clients.end()) return it->second;
  return lookup_handle(raw, where);
}

uint64_t Normalizer::State::by_first_place(detail::Tag tag, const detail::Place& where,
                                           std::string_view prefix) {
  uint64_t place = detail::place_hash(where);
  uint32_t k = next(mix(tag, place));
  uint64_t sym = mix(mix(tag, place), k);
  set_name(sym, std::string(prefix) + detail::place_label(where) + "#" + std::to_string(k));
  return sym;
}

uint64_t Normalizer::State::lookup_handle(uint32_t raw, const detail::Place& where) {
  if (auto it = clients.find(raw); it != clients.end()) return it->second;
  if (client != 0) {
    if (auto it = objects.find(mix(client, raw)); it != objects.end()) return it->second;
  }
  if (auto it = latest.find(raw); it != latest.end()) return it->second;
  auto [it, inserted] = unknown.try_emplace(raw, 0);
  if (inserted) it->second = by_first_place(detail::kTagUnknownHandle, where, "?");
  return it->second;
}

void Normalizer::State::note_created(uint32_t raw) {
  unknown.erase(raw);
  if (raw >= kMinValueHandle) {
    min_handle = std::min(min_handle, raw);
    max_handle = std::max(max_handle, raw);
  }
}

uint64_t Normalizer::State::create_client(uint32_t raw) {
  uint32_t k = client_count++;
  uint64_t sym = mix(detail::kTagClient, k);
  set_name(sym, "c" + std::to_string(k));
  clients[raw] = sym;
  note_created(raw);
  return sym;
}

uint64_t Normalizer::State::create_object(uint32_t parent_raw, uint32_t raw, uint32_t cls,
                                          uint64_t content) {
  uint64_t parent = parent_raw == 0 ? client : lookup_handle(parent_raw, {{}, "hParent"});
  uint64_t def = mix(mix(mix(detail::kTagObject, parent), cls), content);
  uint64_t sym = mix(def, next(def));
  uint32_t shown = next(mix(mix(detail::kTagDisplay, parent), cls));
  std::string name = parent ? name_of(parent) : std::string("?");
  name += '/';
  name += hex(cls);
  name += '#';
  name += std::to_string(shown);
  set_name(sym, std::move(name));
  objects[mix(client, raw)] = sym;
  latest[raw] = sym;
  note_created(raw);
  return sym;
}

void Normalizer::State::free_object(uint32_t raw) {
  if (auto it = clients.find(raw); it != clients.end() && it->second == client) {
    clients.erase(it);
    return;
  }
  auto it = objects.find(mix(client, raw));
  if (it == objects.end()) return;
  if (auto l = latest.find(raw); l != latest.end() && l->second == it->second) latest.erase(l);
  objects.erase(it);
}

bool Normalizer::State::is_known_handle_value(uint32_t raw) const {
  if (raw < kMinValueHandle || raw < min_handle || raw > max_handle) return false;
  return clients.count(raw) != 0 || (client != 0 && objects.count(mix(client, raw)) != 0);
}

uint64_t Normalizer::State::identity_symbol(IdentityKind kind, const IdentityValue& v) {
  uint64_t key = mix(mix(detail::kTagIdentity, static_cast<uint64_t>(kind)),
                     detail::hash_bytes(v.key.data(), v.key.size()));
  auto [it, inserted] = identity_syms.try_emplace(key, 0);
  if (inserted) {
    uint32_t k = identity_count[static_cast<size_t>(kind)]++;
    it->second = mix(mix(detail::kTagIdentity, static_cast<uint64_t>(kind)), k);
    set_name(it->second, identity_name(kind, k));
    out.identities.push_back(IdentitySeen{kind, k, v.text});
  }
  return it->second;
}

uint64_t Normalizer::State::open_fd(int32_t fd, const std::string& path, uint64_t flags) {
  uint64_t p = detail::hash_bytes(path.data(), path.size());
  uint64_t def = mix(mix(detail::kTagFd, p), flags);
  uint64_t sym = mix(def, next(def));
  set_name(sym, path + "#" + std::to_string(next(mix(detail::kTagDisplay, p))));
  fds[fd] = OpenFd{sym, p};
  return sym;
}

uint64_t Normalizer::State::lookup_fd(int32_t fd, const std::string& path) {
  uint64_t p = detail::hash_bytes(path.data(), path.size());
  // An fd the trace saw opened for another path was closed and reused without the close being
  // recorded (captures record no close): it is not that opening any more.
  if (auto it = fds.find(fd); it != fds.end() && (path.empty() || it->second.path == p)) {
    return it->second.sym;
  }
  if (path.empty()) return 0;
  uint64_t sym = mix(detail::kTagUnknownFd, p);
  if (!out.names.count(sym)) set_name(sym, path + "#?");
  return sym;
}

uint64_t Normalizer::State::add_mapping(uint64_t fd_sym, uint64_t start, uint64_t len,
                                        uint64_t content) {
  uint64_t def = mix(mix(detail::kTagMapping, fd_sym), content);
  uint64_t sym = mix(def, next(def));
  std::string name = "map" + std::to_string(next(mix(detail::kTagDisplay, mix(fd_sym, 1))));
  if (fd_sym != 0) name += "@" + name_of(fd_sym);
  set_name(sym, std::move(name));
  remove_mappings(start, std::max<uint64_t>(len, 1));
  maps[start] = Mapping{len, sym};
  return sym;
}

void Normalizer::State::remove_mappings(uint64_t start, uint64_t len) {
  auto it = maps.lower_bound(start);
  while (it != maps.end() && it->first - start < len) it = maps.erase(it);
}

std::pair<uint64_t, uint64_t> Normalizer::State::resolve_pointer(uint64_t v,
                                                                 const detail::Place& where) {
  if (v == 0) return {0, 0};
  for (const detail::LiveBuffer& b : live) {
    if (v >= b.addr && v - b.addr < std::max<uint64_t>(b.size, 1)) {
      return {mix(detail::kTagBuffer, static_cast<uint64_t>(b.role)), v - b.addr};
    }
  }
  auto it = maps.upper_bound(v);
  if (it != maps.begin()) {
    --it;
    if (v - it->first < it->second.len) return {it->second.sym, v - it->first};
  }
  auto [a, inserted] = addresses.try_emplace(v, 0);
  if (inserted) a->second = by_first_place(detail::kTagAddress, where, "va:");
  return {a->second, 0};
}

bool Normalizer::State::looks_like_pointer(uint64_t v) const {
  if (v >= detail::kUserLow && v < detail::kUserHigh) return true;
  for (const detail::LiveBuffer& b : live) {
    if (v >= b.addr && v - b.addr < std::max<uint64_t>(b.size, 1)) return true;
  }
  auto it = maps.upper_bound(v);
  if (it == maps.begin()) return false;
  --it;
  return v - it->first < it->second.len;
}

}  // namespace cudatool::ab
