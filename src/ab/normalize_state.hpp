// Internal to ab/: the tables a Normalizer keeps while it reads a trace (handles, fds, mappings,
// first-appearance addresses) and the walk of one buffer into its normalised image.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "ab/normalize.hpp"

namespace cudatool::ab::detail {

// Symbol ids: hashes of (tag, parent symbol, ordinal or name), so that the same definition in two
// traces gives the same id.
enum Tag : uint64_t {
  kTagClient = 1,
  kTagObject,
  kTagUnknownHandle,
  kTagBuffer,
  kTagMapping,
  kTagAddress,
  kTagFd,
  kTagUnknownFd,
  kTagDisplay,   // counters of display ordinals
  kTagIdentity,  // a GPU identity value: (kind, ordinal among that kind's values)
};

// Where a value was met, for names given by first appearance ("va:pChannelList#2",
// "?hObjectOld#0"). Known layouts: structure and member; unknown layouts: the call (scope), the
// buffer's role and the offset ("params+0x10").
struct Place {
  std::string_view structure;
  std::string_view member;
  uint64_t offset = UINT64_MAX;
  uint64_t scope = 0;
};
uint64_t place_hash(const Place& p);
std::string place_label(const Place& p);

// The user half of the x86-64 address space where PIE heaps (0x55…/0x56…), mmap areas and stacks
// (0x7f…) of a Linux process lie. Used only for buffers of unknown layout.
inline constexpr uint64_t kUserLow = 0x550000000000ULL;
inline constexpr uint64_t kUserHigh = 0x800000000000ULL;
// Handle values below this are not renamed by value in unknown layouts (small numbers are
// counts and flags far more often than handles).
inline constexpr uint32_t kMinValueHandle = 0x10000;

uint64_t mix(uint64_t a, uint64_t b);
uint64_t hash_bytes(const void* p, size_t n);

// A buffer of the current event that pointers may point into.
struct LiveBuffer {
  Role role;
  uint64_t addr;
  uint64_t size;
};

}  // namespace cudatool::ab::detail

namespace cudatool::ab {

struct Normalizer::State {
  State(NormalizedTrace& o, const rm::Tables& tables, const NormalizeOptions& options);

  NormalizedTrace& out;
  const rm::Tables& t;
  bool rules;          // apply ab/rules.cpp kMaskRules
  bool identity;       // name the GPU's identity values (ab/identity.cpp)
  bool capture_view;   // NormalizeOptions::capture_view
  ApiNamer api_namer;  // NormalizeOptions::api_namer for this trace (may be empty)
  std::unordered_map<std::string, uint32_t> api_ids;       // name → index in out.api_names
  std::unordered_map<std::string, uint32_t> env_path_ids;  // path → index in out.env_paths
  std::vector<uint8_t> field_cache;  // per field of the branch: MemberClass + 1, 0 not yet known
  // Memoised lookups in the tables, keyed by the addresses of the names asked for (the names
  // are the tables' own or literals, which do not move): layouts, members, inner structures.
  std::unordered_map<uint64_t, const void*> lookups;
  const rm::StructEntry* layout(std::string_view name);
  const rm::FieldEntry* field(const rm::StructEntry* s, std::string_view name);

  std::unordered_map<int32_t, uint32_t> threads;  // tid → role

  // RM handles. Objects are keyed by (client symbol, raw handle): handles are unique per client.
  std::unordered_map<uint32_t, uint64_t> clients;  // raw → symbol, live clients
  std::unordered_map<uint64_t, uint64_t> objects;  // mix(client symbol, raw) → symbol
  std::unordered_map<uint32_t, uint64_t> latest;   // raw → symbol of the latest such object
  std::unordered_map<uint32_t, uint64_t> unknown;  // raw → "?place#k": used, never created
  uint32_t client_count = 0;
  // Ordinals: how many symbols of one kind and definition were named so far.
  std::unordered_map<uint64_t, uint32_t> counters;
  uint32_t next(uint64_t key) { return counters[key]++; }
  uint32_t min_handle = UINT32_MAX, max_handle = 0;  // raw values of named handles ≥ 0x10000

  // File descriptors.
  struct OpenFd {
    uint64_t sym;
    uint64_t path;  // hash of the path it was opened with
  };
  std::unordered_map<int32_t, OpenFd> fds;

  // GPU identity values: mix(kind, key) → symbol; how many of each kind were named.
  std::unordered_map<uint64_t, uint64_t> identity_syms;
  std::array<uint32_t, kIdentityKinds> identity_count{};
  // The symbol of an identity value: gpu#<ordinal among the values of its kind>.
  uint64_t identity_symbol(IdentityKind kind, const IdentityValue& v);

  // Device mappings by start address, and addresses named by first appearance.
  struct Mapping {
    uint64_t len;
    uint64_t sym;
  };
  std::map<uint64_t, Mapping> maps;
  std::unordered_map<uint64_t, uint64_t> addresses;  // value → symbol

  // The event being normalised.
  uint64_t client = 0;  // its client's symbol (0: none)
  uint64_t scope = 0;   // which call (for places in buffers of unknown layout)
  std::vector<detail::LiveBuffer> live;

  uint32_t thread_of(int32_t pid, int32_t tid);
  void set_name(uint64_t sym, std::string name);
  const std::string& name_of(uint64_t sym);

  uint64_t client_symbol(uint32_t raw,
                         const detail::Place& where);  // a live client, else lookup_handle
  // In the event's client, any client, else a name by first appearance at `where`.
  uint64_t lookup_handle(uint32_t raw, const detail::Place& where);
  // A handle the trace created: no longer unknown; widens the range that values are read as handles
  // in.
  void note_created(uint32_t raw);
  // A value met for the first time at `where` (a never-created handle, an address in no known
  // buffer): named by the place and its ordinal among such values there ("?hObjectOld#0").
  uint64_t by_first_place(detail::Tag tag, const detail::Place& where, std::string_view prefix);
  uint64_t create_client(uint32_t raw);
  // An object of class `cls` under `parent_raw` (0: the event's client) whose creation
  // parameters hash to `content`: identified by (parent, class, content, ordinal among equal
  // ones), shown as parent/class#ordinal-among-the-class.
  uint64_t create_object(uint32_t parent_raw, uint32_t raw, uint32_t cls, uint64_t content);
  void free_object(uint32_t raw);
  bool is_known_handle_value(uint32_t raw) const;  // for structures of unknown layout

  uint64_t open_fd(int32_t fd, const std::string& path, uint64_t flags);
  uint64_t lookup_fd(int32_t fd, const std::string& path);  // 0 when unknown and path is ""
  // A mapping, identified by (fd, len, prot, flags, offset, ordinal among equal ones).
  uint64_t add_mapping(uint64_t fd_sym, uint64_t start, uint64_t len, uint64_t content);
  void remove_mappings(uint64_t start, uint64_t len);

  // A pointer: {base symbol, delta}; {0, 0} for NULL.
  std::pair<uint64_t, uint64_t> resolve_pointer(uint64_t v, const detail::Place& where);
  // Whether an 8-byte word of a structure of unknown layout looks like a user address
  // (inside a live buffer or mapping, or in the user-space range of x86-64 processes).
  bool looks_like_pointer(uint64_t v) const;

  // Appends the normalised image of `raw` (compared length `compared`) to out.bytes and its
  // symbols to out.substs, filling `nb`. `layout` may be null (byte-level comparison);
  // `array` walks `layout` repeatedly over the buffer.
  void walk_buffer(NormBuffer& nb, const uint8_t* raw, uint32_t compared,
                   const rm::StructEntry* layout, bool array);
};

namespace detail {
// normalize_ioctl.cpp: the buffers and RM identity of an ioctl.
void add_ioctl(Normalizer::State& s, const trace::Event& ev, NormEvent& ne);
Role role_of(std::string_view role);
// normalize_env.cpp: the members and content of an environment event (stat, file, mknod, …).
void add_environment(Normalizer::State& s, const trace::Event& ev, NormEvent& ne);
}  // namespace detail

}  // namespace cudatool::ab
