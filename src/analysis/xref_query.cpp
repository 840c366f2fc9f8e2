#include "analysis/xref_query.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <optional>
#include <span>
#include <unordered_set>

#include "analysis/driver_tables.hpp"
#include "base/hex.hpp"

namespace cudatool {
namespace {

std::optional<int32_t> function_named(const FunctionMap& map, std::string_view name) {
  auto fns = map.functions();
  if (name.starts_with("fn_")) {
    auto v = parse_u64(name.substr(3), /*allow_decimal=*/false);
    if (v) {
      if (const Function* f = map.at(*v)) return static_cast<int32_t>(f - fns.data());
    }
  }
  for (size_t i = 0; i < fns.size(); ++i) {
    for (const auto& n : map.names(fns[i])) {
      if (n.name == name) return static_cast<int32_t>(i);
    }
  }
  return std::nullopt;
}

}  // namespace

Result<XrefTarget> resolve_xref_target(const XrefIndex& x, std::string_view text) {
  const FunctionMap& map = x.map();
  XrefTarget t;
  t.input = std::string(text);
  std::string_view import = text;
  bool plt_only = false;
  if (text.ends_with("@plt")) {
    import = text.substr(0, text.size() - 4);
    plt_only = true;
  }
  if (!plt_only) {
    if (auto fi = function_named(map, text)) {
      const Function& f = map.functions()[static_cast<size_t>(*fi)];
      t.kind = XrefTarget::Kind::kFunction;
      t.function = *fi;
      t.name = map.display_name(f);
      t.address = f.start;
      t.end = std::max(f.end(), f.start + 1);
      return t;
    }
  }
  for (const auto& e : x.plt()) {
    if (e.name == import) t.plt.push_back(e.address);
  }
  if (!plt_only || !t.plt.empty()) {
    for (const auto& g : x.got()) {
      if (g.name == import) t.slots.push_back(g.address);
    }
  }
  if (!t.plt.empty() || (!plt_only && !t.slots.empty())) {
    t.kind = XrefTarget::Kind::kImport;
    t.name = t.plt.empty() ? std::string(import) : fmt::format("{}@plt", import);
    t.address = t.plt.empty() ? t.slots.front() : t.plt.front();
    t.end = t.address + 1;
    return t;
  }
  if (!plt_only && (text.starts_with("0x") || text.starts_with("0X"))) {
    if (auto v = parse_u64(text, /*allow_decimal=*/false)) {
      if (const Function* f = map.at(*v)) {
        t.kind = XrefTarget::Kind::kFunction;
        t.function = static_cast<int32_t>(f - map.functions().data());
        t.name = map.display_name(*f);
        t.address = f->start;
        t.end = std::max(f->end(), f->start + 1);
        return t;
      }
      if (x.section_at(*v) == nullptr) {
        return make_error(fmt::format("target '{}'", text), "", std::nullopt,
                          "no section of the library holds that address (give an address "
                          "of its code or data, as `cudatool info` lists the sections)");
      }
      t.kind = XrefTarget::Kind::kAddress;
      t.name = fmt::format("{:#x}", *v);
      t.address = *v;
      t.end = *v + 1;
      if (const Function* f = map.find(*v)) {
        t.function = static_cast<int32_t>(f - map.functions().data());
      }
      return t;
    }
  }
  return make_error(fmt::format("target '{}'", text), "", std::nullopt,
                    plt_only ? "no PLT entry jumps to an import of that name"
                             : "not a function name (export, table name, fn_<hex>), an import, "
                               "or an address (0x…)");
}

std::vector<const Ref*> references_to(const XrefIndex& x, const XrefTarget& t) {
  if (t.kind != XrefTarget::Kind::kImport) return x.refs_to(t.address, t.end);
  std::vector<const Ref*> out;
  for (uint64_t a : t.plt) {
    auto r = x.refs_to(a, a + 1);
    out.insert(out.end(), r.begin(), r.end());
  }
  for (uint64_t a : t.slots) {
    for (const Ref* r : x.refs_to(a, a + 1)) {
      if (r->kind == RefKind::kPointer) continue;  // the relocation itself is no user
      std::string_view sec = x.map().exec_section(r->site);
      if (sec == ".plt" || sec == ".plt.got" || sec == ".plt.sec") continue;  // the stub itself
      out.push_back(r);
    }
  }
  std::sort(out.begin(), out.end(), [](const Ref* a, const Ref* b) {
    return a->target != b->target ? a->target < b->target : a->site < b->site;
  });
  return out;
}

DataNames::DataNames(DriverImage& img) {
  auto& tables = img.facet<DriverTables>();
  for (const auto& e : tables.dispatch().entries) {
    if (e.slot != 0 && e.implementation != 0)
      names_.emplace(e.slot, fmt::format("dispatch slot of {}", e.export_name));
  }
  for (const auto& r : tables.procaddress().rows) {
    names_.emplace(r.entry_vaddr, fmt::format("cuGetProcAddress row {} v{} {}", r.api,
                                              r.cuda_version, cuda::proc_flags_name(r.flags)));
  }
  for (const auto& t : tables.export_tables().tables) {
    std::string table =
        t.known != nullptr ? std::string(t.known->name) : cuda::format_uuid(t.uuid).substr(0, 8);
    for (const auto& s : t.slots) {
      if (s.kind == cuda::SlotKind::kFunction || s.kind == cuda::SlotKind::kData) {
        names_.emplace(s.vaddr, fmt::format("export table {} slot {}", table, s.index));
      }
    }
  }
  for (const auto& e : tables.errors().entries) {
    names_.emplace(e.vaddr + 8, fmt::format("CUresult table {} name", e.name));
    names_.emplace(e.vaddr + 16, fmt::format("CUresult table {} description", e.name));
  }
  for (const auto& e : img.exports()) {
    if (e.sym.type() == STT_OBJECT) names_.emplace(e.sym.st_value, std::string(e.sym.name));
  }
}

std::string_view DataNames::at(uint64_t addr) const {
  auto it = names_.find(addr);
  return it == names_.end() ? std::string_view() : std::string_view(it->second);
}

std::string_view address_kind_name(AddressInfo::Kind k) {
  switch (k) {
    case AddressInfo::Kind::kFunction:
      return "function";
    case AddressInfo::Kind::kPlt:
      return "plt";
    case AddressInfo::Kind::kString:
      return "string";
    case AddressInfo::Kind::kGot:
      return "got";
    case AddressInfo::Kind::kData:
      return "data";
    case AddressInfo::Kind::kNone:
      return "none";
  }
  return "?";
}

AddressInfo describe_address(const XrefIndex& x, const DataNames* names, uint64_t addr) {
  AddressInfo a;
  const FunctionMap& map = x.map();
  a.section = map.exec_section(addr);
  const bool code = !a.section.empty();
  if (const elf::MappedSection* s = x.section_at(addr)) {
    a.section = s->name();
    a.section_offset = addr - s->addr;
  }
  if (const PltEntry* p = x.plt_at(addr)) {
    a.kind = AddressInfo::Kind::kPlt;
    a.name = fmt::format("{}@plt", p->name);
    a.section = p->section;
    return a;
  }
  if (code) {
    if (const Function* f = map.find(addr)) {
      a.kind = AddressInfo::Kind::kFunction;
      a.name = map.display_name(*f);
      a.offset = addr - f->start;
    }
    return a;
  }
  if (const CString* s = x.string_at(addr)) {
    a.kind = AddressInfo::Kind::kString;
    a.string = s;
    a.section = s->section;
    return a;
  }
  if (const GotSlot* g = x.got_at(addr)) {
    a.kind = AddressInfo::Kind::kGot;
    a.name = fmt::format("GOT slot of {}", g->name);
  }
  if (names != nullptr && a.name.empty()) {
    std::string_view n = names->at(addr);
    if (!n.empty()) {
      a.kind = AddressInfo::Kind::kData;
      a.name = std::string(n);
    }
  }
  return a;
}

std::string node_name(const XrefIndex& x, int64_t node) {
  auto fns = x.map().functions();
  if (node >= 0 && static_cast<size_t>(node) < fns.size())
    return x.map().display_name(fns[static_cast<size_t>(node)]);
  size_t k = static_cast<size_t>(node) - fns.size();
  if (node >= 0 && k < x.plt().size()) return fmt::format("{}@plt", x.plt()[k].name);
  return "?";
}

namespace {

struct Edge {
  uint32_t to = 0;
  const Ref* ref = nullptr;
  uint64_t slot = 0;
  bool pointer = false;
};

class CallGraph {
 public:
  CallGraph(const XrefIndex& x, bool with_pointers) : x_(x), nf_(x.map().functions().size()) {
    const size_t n = nf_ + x.plt().size();
    offsets_.assign(n + 1, 0);
    std::vector<std::pair<uint32_t, Edge>> all;
    std::unordered_set<uint64_t> seen;
    // One edge per (from, to): the first reference that makes it, direct ones before pointers.
    auto push = [&](uint32_t from, Edge e) {
      if (seen.insert((uint64_t{from} << 32) | e.to).second) all.push_back({from, e});
    };
    for (size_t f = 0; f < nf_; ++f) {
      const auto refs = x.refs_from(static_cast<int32_t>(f));
      for (const Ref* r : refs) {
        if (r->kind != RefKind::kCall && r->kind != RefKind::kTailJump) continue;
        if (auto to = node_at(r->target, /*start_only=*/false))
          push(uint32_t(f), {*to, r, 0, false});
      }
      if (!with_pointers) continue;
      for (const Ref* r : refs) {
        if (r->kind == RefKind::kLea || r->kind == RefKind::kLoad || r->kind == RefKind::kStore)
          pointer_edges(uint32_t(f), r, push);
      }
    }
    for (const auto& [from, e] : all) ++offsets_[from + 1];
    for (size_t i = 1; i < offsets_.size(); ++i) offsets_[i] += offsets_[i - 1];
    edges_.resize(all.size());
    std::vector<uint32_t> next(offsets_.begin(), offsets_.end() - 1);
    for (const auto& [from, e] : all) edges_[next[from]++] = e;
  }

  [[nodiscard]] size_t nodes() const { return offsets_.size() - 1; }
  [[nodiscard]] std::span<const Edge> out(uint32_t node) const {
    return std::span<const Edge>(edges_).subspan(offsets_[node],
                                                 offsets_[node + 1] - offsets_[node]);
  }

 private:
  std::optional<uint32_t> node_at(uint64_t addr, bool start_only) const {
    const auto& plt = x_.plt();
    if (const PltEntry* p = x_.plt_at(addr)) return uint32_t(nf_ + size_t(p - plt.data()));
    const Function* f = start_only ? x_.map().at(addr) : x_.map().find(addr);
    if (f == nullptr) return std::nullopt;
    return uint32_t(f - x_.map().functions().data());
  }

  template <class Push>
  void pointer_edges(uint32_t from, const Ref* r, Push& push) {
    // The address of a function (or PLT entry) itself.
    if (!x_.map().exec_section(r->target).empty()) {
      if (auto to = node_at(r->target, /*start_only=*/true)) push(from, {*to, r, 0, true});
      return;
    }
    // A data object: the relocated code pointers in it, up to the next address code refers to.
    const uint64_t window =
        r->target > ~uint64_t{0} - kTableWindow ? ~uint64_t{0} : r->target + kTableWindow;
    const uint64_t hi = std::min(x_.next_target_after(r->target), window);
    for (const Ref& p : x_.pointers_in(r->target, hi)) {
      if (auto to = node_at(p.target, /*start_only=*/true)) push(from, {*to, r, p.site, true});
    }
  }

  const XrefIndex& x_;
  size_t nf_;
  std::vector<uint32_t> offsets_;
  std::vector<Edge> edges_;
};

}  // namespace

PathResult shortest_paths(const XrefIndex& x, const XrefTarget& from, const XrefTarget& to,
                          size_t max_chains) {
  PathResult res;
  const size_t nf = x.map().functions().size();
  if (from.function < 0) return res;
  std::vector<uint32_t> goals;
  if (to.kind == XrefTarget::Kind::kImport) {
    for (uint64_t a : to.plt) {
      if (const PltEntry* p = x.plt_at(a))
        goals.push_back(uint32_t(nf + size_t(p - x.plt().data())));
    }
  } else if (to.function >= 0) {
    goals.push_back(uint32_t(to.function));
  }
  if (goals.empty()) return res;

  for (int pass = 0; pass < 2 && !res.found; ++pass) {
    CallGraph g(x, /*with_pointers=*/pass == 1);
    const size_t n = g.nodes();
    std::vector<int32_t> dist(n, -1);
    std::vector<uint64_t> ways(n, 0);  // number of shortest chains, capped
    std::deque<uint32_t> q;
    const auto src = static_cast<uint32_t>(from.function);
    dist[src] = 0;
    ways[src] = 1;
    q.push_back(src);
    while (!q.empty()) {
      uint32_t u = q.front();
      q.pop_front();
      for (const Edge& e : g.out(u)) {
        if (dist[e.to] < 0) {
          dist[e.to] = dist[u] + 1;
          q.push_back(e.to);
        }
        if (dist[e.to] == dist[u] + 1)
          ways[e.to] = std::min(PathResult::kCountCap, ways[e.to] + ways[u]);
      }
    }
    int32_t best = -1;
    for (uint32_t goal : goals) {
      if (dist[goal] > 0 && (best < 0 || dist[goal] < best)) best = dist[goal];
    }
    if (best < 0) continue;
    res.found = true;
    res.through_pointer = pass == 1;
    res.length = static_cast<uint32_t>(best);
    // Chains, enumerated forward along edges that stay on a shortest route to a goal: a node
    // may continue when its distance from the goal is what remains.
    std::vector<int32_t> to_goal(n, -1);  // BFS over reversed edges from the goals
    {
      std::vector<std::vector<uint32_t>> rev(n);
      for (uint32_t u = 0; u < n; ++u)
        for (const Edge& e : g.out(u)) rev[e.to].push_back(u);
      std::deque<uint32_t> rq;
      for (uint32_t goal : goals) {
        if (dist[goal] == best) {
          to_goal[goal] = 0;
          rq.push_back(goal);
          res.shortest_count = std::min(PathResult::kCountCap, res.shortest_count + ways[goal]);
        }
      }
      while (!rq.empty()) {
        uint32_t v = rq.front();
        rq.pop_front();
        for (uint32_t u : rev[v]) {
          if (to_goal[u] < 0) {
            to_goal[u] = to_goal[v] + 1;
            rq.push_back(u);
          }
        }
      }
    }
    std::vector<PathStep> chain;
    auto walk = [&](auto&& self, uint32_t u) -> void {
      if (res.chains.size() >= max_chains) return;
      if (to_goal[u] == 0 && dist[u] == best) {
        res.chains.push_back(chain);
        return;
      }
      for (const Edge& e : g.out(u)) {
        if (dist[e.to] != dist[u] + 1 || to_goal[e.to] != to_goal[u] - 1) continue;
        chain.push_back(
            {.from = u, .to = e.to, .ref = e.ref, .pointer = e.pointer, .slot = e.slot});
        self(self, e.to);
        chain.pop_back();
        if (res.chains.size() >= max_chains) return;
      }
    };
    walk(walk, src);
  }
  return res;
}

}  // namespace cudatool
