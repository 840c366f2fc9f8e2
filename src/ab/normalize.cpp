// Normalisation of one event: which call it is (escape, UVM ioctl, system call), which RM objects
// it creates or frees, and the normalised images of its buffers (walk.cpp).
#include "ab/normalize.hpp"

#include <sys/stat.h>
#include <array>

#include <algorithm>
#include <cstring>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "ab/normalize_state.hpp"
#include "ab/rules.hpp"
#include "base/bytes.hpp"
#include "trace/loaded_libcuda.hpp"
#include "trace/trace_file.hpp"

namespace cudatool::ab {

using detail::hash_bytes;
using detail::mix;

namespace {

// Images of the system call's own members (Role::kCall).
constexpr std::array kOpenLayout{CallMember{"flags", 0, 8}, CallMember{"path", 8, 0}};
constexpr std::array kMmapLayout{CallMember{"addr", 0, 8}, CallMember{"len", 8, 8},
                                 CallMember{"prot", 16, 8}, CallMember{"flags", 24, 8},
                                 CallMember{"offset", 32, 8}};
constexpr std::array kMunmapLayout{CallMember{"addr", 0, 8}, CallMember{"len", 8, 8}};
constexpr std::array kPathLayout{CallMember{"path", 0, 0}};
constexpr std::array kNameLayout{CallMember{"sys", 0, 0}};
// Environment events (v2, normalize_env.cpp): the answer's numbers and the flags, then the path
// (and a link's target) as text.
constexpr std::array kEnvLayout{CallMember{"mode", 0, 8}, CallMember{"rdev", 8, 8},
                                CallMember{"size", 16, 8}, CallMember{"flags", 24, 8},
                                CallMember{"path", 32, 0}};

}  // namespace

std::string_view role_name(Role r) {
  switch (r) {
    case Role::kCall:
      return "call";
    case Role::kArg:
      return "arg";
    case Role::kParams:
      return "params";
    case Role::kXfer:
      return "xfer";
    case Role::kRights:
      return "rights";
    case Role::kContent:
      return "content";
    case Role::kOther:
      break;
  }
  return "other";
}

std::span<const CallMember> call_layout(trace::Sys s) {
  if (trace::is_environment(s)) return kEnvLayout;
  switch (s) {
    case trace::Sys::kOpen:
      return kOpenLayout;
    case trace::Sys::kMmap:
      return kMmapLayout;
    case trace::Sys::kMunmap:
      return kMunmapLayout;
    case trace::Sys::kExecve:
      return kPathLayout;
    case trace::Sys::kUnknown:
      return kNameLayout;
    default:
      return {};
  }
}

std::string NormalizedTrace::name(uint64_t sym) const {
  auto it = names.find(sym);
  return it == names.end() ? std::string("?") : it->second;
}

std::string NormalizedTrace::describe(const Subst& s) const {
  std::string n = name(s.base);
  if (s.kind == SymKind::kPointer && s.delta != 0) {
    char buf[24];
    snprintf(buf, sizeof buf, "+0x%llx", static_cast<unsigned long long>(s.delta));
    n += buf;
  }
  return n;
}

Normalizer::State::State(NormalizedTrace& o, const rm::Tables& tables,
                         const NormalizeOptions& options)
    : out(o),
      t(tables),
      rules(options.rules),
      identity(options.identity),
      capture_view(options.capture_view) {
  size_t n = 0;
  for (const rm::StructEntry& s : t.structs()) {
    n = std::max<size_t>(n, size_t{s.first_field} + s.field_count);
  }
  field_cache.assign(n, 0);
  for (Role r : {Role::kCall, Role::kArg, Role::kParams, Role::kXfer, Role::kRights, Role::kOther,
                 Role::kContent}) {
    set_name(mix(detail::kTagBuffer, static_cast<uint64_t>(r)), std::string(role_name(r)));
  }
}

Normalizer::Normalizer(NormalizedTrace& out, const rm::Tables& tables,
                       const NormalizeOptions& options)
    : out_(out), st_(std::make_unique<State>(out, tables, options)) {
  out_.tables = &tables;
  if (options.api_namer) st_->api_namer = options.api_namer(out_.header);
}

Normalizer::~Normalizer() = default;

namespace {

// Builds the kCall image of a system call: fixed members little-endian, then the path.
struct CallImage {
  std::vector<uint8_t> bytes;
  void u64(uint64_t v) {
    uint8_t b[8];
    store_le<uint64_t>(b, v);
    bytes.insert(bytes.end(), b, b + 8);
  }
  void text(std::string_view s) { bytes.insert(bytes.end(), s.begin(), s.end()); }
};

}  // namespace

namespace {

// The call's own members as one buffer: literal, except the pointer members (at `pointers`)
// renamed by position.
void add_call_image(Normalizer::State& s, const trace::Event& ev, const CallImage& ci,
                    std::initializer_list<uint32_t> pointers) {
  NormalizedTrace& out = s.out;
  NormBuffer nb;
  nb.role = Role::kCall;
  nb.after = true;
  nb.recorded = nb.compared = ci.bytes.size();
  nb.bytes = out.bytes.size();
  nb.subst = out.substs.size();
  out.bytes.insert(out.bytes.end(), ci.bytes.begin(), ci.bytes.end());
  out.masks.compared += ci.bytes.size();
  for (uint32_t off : pointers) {
    uint64_t v = load_le<uint64_t>(ci.bytes.data() + off);
    if (v == 0) continue;
    auto [base, delta] = s.resolve_pointer(v, detail::Place{trace::sys_name(ev.sys), "addr"});
    std::memset(out.bytes.data() + nb.bytes + off, 0, 8);
    out.substs.push_back(Subst{off, 8, SymKind::kPointer, base, delta, v});
    ++out.masks.pointers;
  }
  nb.subst_count = static_cast<uint32_t>(out.substs.size() - nb.subst);
  out.buffers.push_back(nb);
}

// The event's members and buffers, by system call; `ok`: the call succeeded.
void add_members(Normalizer::State& s, const trace::Event& ev, NormEvent& ne, bool ok) {
  auto add_call_image = [&](const CallImage& ci, std::initializer_list<uint32_t> pointers) {
    ::cudatool::ab::add_call_image(s, ev, ci, pointers);
  };
  if (trace::is_environment(ev.sys)) {
    detail::add_environment(s, ev, ne);
    return;
  }
  switch (ev.sys) {
    case trace::Sys::kOpen: {
      CallImage ci;
      ci.u64(ev.open_flags);
      ci.text(ev.path);
      add_call_image(ci, {});
      if (ok && ev.ret >= 0) {
        ne.ret_sym = s.open_fd(static_cast<int32_t>(ev.ret), ev.path, ev.open_flags);
        ne.ret = 0;
      }
      break;
    }
    case trace::Sys::kClose:
      s.fds.erase(ev.fd);
      break;
    case trace::Sys::kDup:
      if (ok && ev.ret >= 0) {
        // A dup is named as an opening of the same path (flags: none of open(2)'s).
        ne.ret_sym = s.open_fd(static_cast<int32_t>(ev.ret), ev.path, ~uint64_t{0});
        ne.ret = 0;
      }
      break;
    case trace::Sys::kMmap: {
      CallImage ci;
      for (uint64_t v : {ev.addr, ev.len, ev.prot, ev.map_flags, ev.offset}) ci.u64(v);
      add_call_image(ci, {0});
      if (ok) {
        uint64_t content = mix(mix(mix(ev.len, ev.prot), ev.map_flags), ev.offset);
        ne.ret_sym = s.add_mapping(ne.fd, static_cast<uint64_t>(ev.ret), ev.len, content);
        ne.ret = 0;
      }
      break;
    }
    case trace::Sys::kMunmap: {
      CallImage ci;
      ci.u64(ev.addr);
      ci.u64(ev.len);
      add_call_image(ci, {0});
      if (ok) s.remove_mappings(ev.addr, std::max<uint64_t>(ev.len, 1));
      break;
    }
    case trace::Sys::kIoctl:
      detail::add_ioctl(s, ev, ne);
      break;
    case trace::Sys::kExecve: {
      CallImage ci;
      ci.text(ev.path);
      add_call_image(ci, {});
      break;
    }
    case trace::Sys::kUnknown: {
      CallImage ci;
      ci.text(ev.sys_raw);
      add_call_image(ci, {});
      break;
    }
    case trace::Sys::kFork:  // the child's pid differs between runs; its calls carry the facts
      ne.ret = ev.err == 0 && ev.ret >= 0 ? 0 : ev.ret;
      break;
    case trace::Sys::kExit:
      break;
    default:  // the environment calls, above
      break;
  }
}

// The event's keys (ab/normalize.hpp): what call it is, its shape, what was asked (the call's own
// members and every buffer as it was before the call, with the names in them: the object an RM
// call is about is a handle member of its argument) and all of it with the names.
void hash_event(const NormalizedTrace& out, const trace::Event& ev, NormEvent& ne) {
  uint64_t key = mix(static_cast<uint64_t>(ne.sys) + 1, static_cast<uint64_t>(ne.device));
  key = mix(key, ne.request);
  key = mix(key, ne.nr);
  if (ne.cmd) key = mix(key, *ne.cmd + (uint64_t{1} << 32));
  // Opens and environment events are calls on a path: another path is another call.
  if (ev.sys == trace::Sys::kOpen || trace::is_environment(ev.sys)) {
    key = mix(key, hash_bytes(ev.path.data(), ev.path.size()));
  }
  ne.key = key;
  uint64_t shape = mix(key, static_cast<uint64_t>(ne.ret));
  shape = mix(shape, ne.ret_sym != 0);
  shape = mix(shape, static_cast<uint64_t>(static_cast<uint32_t>(ne.err)));
  shape = mix(shape, ne.fd != 0);
  uint64_t names = mix(ne.ret_sym, ne.fd);
  uint64_t input = mix(key, ne.fd);
  for (uint64_t i = ne.buffer; i < out.buffers.size(); ++i) {
    const NormBuffer& nb = out.buffers[i];
    bool is_input = nb.role == Role::kCall || !nb.after;
    uint64_t tag = (static_cast<uint64_t>(nb.role) << 8) | (nb.after ? 2 : 0) | nb.unreadable;
    uint64_t content = mix(nb.compared, hash_bytes(out.bytes.data() + nb.bytes, nb.compared));
    shape = mix(mix(shape, tag), content);
    if (is_input) input = mix(mix(input, tag), content);
    for (uint64_t k = nb.subst; k < nb.subst + nb.subst_count; ++k) {
      const Subst& x = out.substs[k];
      uint64_t where =
          (uint64_t{x.offset} << 16) | (uint64_t{x.width} << 8) | static_cast<uint64_t>(x.kind);
      shape = mix(mix(shape, where), x.delta);
      names = mix(names, x.base);
      if (is_input) input = mix(mix(mix(input, where), x.delta), x.base);
    }
  }
  ne.shape = shape;
  ne.input = input;
  ne.full = mix(shape, names);
}

}  // namespace

void Normalizer::add(const trace::Event& ev) {
  // A compute launch a replay's fake GPU completed ("launch", docs/replay.md) reports GPU work,
  // not a call the program made: nothing to compare with a recording.
  if (ev.sys == trace::Sys::kUnknown && ev.sys_raw == "launch") return;
  State& s = *st_;
  const rm::Tables& t = s.t;
  NormEvent ne;
  ne.seq = ev.seq;
  ne.tid = ev.tid;
  ne.index = static_cast<uint32_t>(out_.events.size());
  ne.thread = s.thread_of(ev.pid, ev.tid);
  ne.sys = ev.sys;
  ne.device = rm::classify_device(ev.path);
  ne.tables = &t;
  ne.ret = ev.ret;
  ne.err = ev.err;
  ne.call = trace::sys_name(ev.sys);
  ne.buffer = out_.buffers.size();
  s.client = 0;
  s.live.clear();
  bool has_fd = ev.sys == trace::Sys::kClose || ev.sys == trace::Sys::kDup ||
                ev.sys == trace::Sys::kIoctl || ev.sys == trace::Sys::kMmap;
  if (has_fd) ne.fd = s.lookup_fd(ev.fd, ev.path.empty() ? std::string("fd") : ev.path);
  bool ok = ev.err == 0 && ev.ret != -1;

  add_members(s, ev, ne, ok);
  ne.buffer_count = static_cast<uint32_t>(out_.buffers.size() - ne.buffer);
  hash_event(out_, ev, ne);
  if (s.api_namer) {
    if (std::optional<std::string> api = s.api_namer(ev); api && !api->empty()) {
      auto [it, added] = s.api_ids.try_emplace(*api, static_cast<uint32_t>(out_.api_names.size()));
      if (added) out_.api_names.push_back(*api);
      ne.api = it->second;
    }
  }
  out_.events.push_back(ne);
}

namespace {

void choose_tables(NormalizedTrace& nt) {
  std::string_view v = nt.header.driver_version ? std::string_view(*nt.header.driver_version)
                       : !nt.header.driver_version_line.empty()
                           ? std::string_view(nt.header.driver_version_line)
                           : std::string_view(nt.libcuda_version);
  rm::BranchChoice c = rm::choose_branch(v);
  nt.tables = c.tables;
  nt.exact_branch = c.exact_major;
}

// Renumbers the thread roles, which the Normalizer gave in the order of the threads' first calls,
// into the order of NormalizedTrace::thread_tids' comment.
void order_threads(NormalizedTrace& nt) {
  size_t n = nt.thread_tids.size();
  if (n < 2) return;
  std::unordered_map<int32_t, size_t> process_rank;  // pid → order of first appearance
  for (size_t r = 0; r < n; ++r) process_rank.try_emplace(nt.thread_pids[r], process_rank.size());
  std::vector<uint32_t> order(n);
  for (size_t r = 0; r < n; ++r) order[r] = static_cast<uint32_t>(r);
  auto key = [&](uint32_t r) {
    int32_t pid = nt.thread_pids[r], tid = nt.thread_tids[r];
    return std::tuple(process_rank[pid], tid != pid, tid);
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t x, uint32_t y) { return key(x) < key(y); });
  std::vector<uint32_t> role_of(n);
  std::vector<int32_t> tids(n), pids(n);
  for (size_t k = 0; k < n; ++k) {
    role_of[order[k]] = static_cast<uint32_t>(k);
    tids[k] = nt.thread_tids[order[k]];
    pids[k] = nt.thread_pids[order[k]];
  }
  for (NormEvent& e : nt.events) e.thread = role_of[e.thread];
  nt.thread_tids = std::move(tids);
  nt.thread_pids = std::move(pids);
}

std::unique_ptr<NormalizedTrace> normalize_reader(trace::TraceReader& reader, std::string path,
                                                  uint64_t size_hint,
                                                  const NormalizeOptions& options,
                                                  std::optional<trace::LoadedLibcuda> lib) {
  auto nt = std::make_unique<NormalizedTrace>();
  nt->path = std::move(path);
  nt->header = reader.header();
  if (lib) nt->libcuda_version = std::move(lib->version);
  // Room for what a trace of this size usually holds (about 800 bytes of JSON per event), so
  // that the arrays are not copied while they grow. Address space only, until used.
  uint64_t n = std::min<uint64_t>(size_hint, uint64_t{1} << 32);
  nt->events.reserve(n / 700);
  nt->buffers.reserve(n / 300);
  nt->substs.reserve(n / 130);
  nt->bytes.reserve(n / 3);
  choose_tables(*nt);
  NormalizeOptions with_reader;
  if (options.reader_api_namer) {
    with_reader = options;
    with_reader.api_namer = [namer = options.reader_api_namer(reader)](const trace::Header&) {
      return namer;
    };
  }
  {
    Normalizer norm(*nt, *nt->tables, options.reader_api_namer ? with_reader : options);
    trace::Event ev;
    while (reader.next(ev)) norm.add(ev);
  }
  order_threads(*nt);
  nt->fn_tables = reader.function_tables();
  nt->fn_blocks = reader.function_blocks();
  nt->trailer = reader.trailer();
  nt->truncated = reader.truncated();
  nt->diagnostics = reader.diagnostics();
  return nt;
}

// A trace file whose reader has read its header.
std::unique_ptr<NormalizedTrace> normalize_opened(trace::TraceReader& r, const std::string& path,
                                                  const NormalizeOptions& options) {
  struct stat st;
  uint64_t size = ::stat(path.c_str(), &st) == 0 && st.st_size > 0 ? st.st_size : 0;
  return normalize_reader(r, path, size, options, trace::loaded_libcuda_if_unversioned(path));
}

}  // namespace

Result<std::unique_ptr<NormalizedTrace>> normalize_file(const std::string& path,
                                                        const NormalizeOptions& options) {
  auto r = trace::TraceReader::open(path);
  if (!r) return r.error();
  return normalize_opened(**r, path, options);
}

bool NormalizeOptions::capture_view_against(const trace::Header& self, const trace::Header& other) {
  return other.mode == "import" && self.mode != "import";
}

NormalizedPair normalize_pair(const std::string& path_a, const std::string& path_b,
                              const NormalizeOptions& options) {
  NormalizedPair out;
  auto ra = trace::TraceReader::open(path_a);
  auto rb = trace::TraceReader::open(path_b);
  if (!ra || !rb) {
    if (!ra) out.a = ra.error();
    if (!rb) out.b = rb.error();
    // The other is read all the same, so that its errors are reported too.
    if (ra) out.a = normalize_opened(**ra, path_a, options);
    if (rb) out.b = normalize_opened(**rb, path_b, options);
    return out;
  }
  // What an imported capture holds decides what of the other is compared.
  NormalizeOptions oa = options, ob = options;
  oa.capture_view |= NormalizeOptions::capture_view_against((*ra)->header(), (*rb)->header());
  ob.capture_view |= NormalizeOptions::capture_view_against((*rb)->header(), (*ra)->header());
  std::thread other([&] { out.b = normalize_opened(**rb, path_b, ob); });
  out.a = normalize_opened(**ra, path_a, oa);
  other.join();
  return out;
}

Result<std::unique_ptr<NormalizedTrace>> normalize_memory(std::string bytes, std::string name,
                                                          const NormalizeOptions& options) {
  uint64_t size = bytes.size();
  std::optional<trace::LoadedLibcuda> lib = trace::loaded_libcuda_if_unversioned(bytes, name);
  auto r = trace::TraceReader::from_memory(std::move(bytes), name);
  if (!r) return r.error();
  return normalize_reader(**r, std::move(name), size, options, std::move(lib));
}

std::unique_ptr<NormalizedTrace> normalize_events(const trace::Header& header,
                                                  const std::vector<trace::Event>& events,
                                                  const NormalizeOptions& options) {
  auto nt = std::make_unique<NormalizedTrace>();
  nt->header = header;
  if (trace::names_no_driver_version(header)) nt->libcuda_version = options.libcuda_version;
  choose_tables(*nt);
  Normalizer n(*nt, *nt->tables, options);
  for (const trace::Event& ev : events) n.add(ev);
  order_threads(*nt);
  return nt;
}

}  // namespace cudatool::ab
