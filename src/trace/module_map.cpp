#include "trace/module_map.hpp"

#include <algorithm>

namespace cudatool::trace {

void ModuleMap::sync(const std::vector<Module>& all) {
  // A smaller vector than before: another reader (or a restart); take it from the beginning.
  if (all.size() < synced_) synced_ = 0;
  for (; synced_ < all.size(); ++synced_) add(all[synced_]);
}

void ModuleMap::add(const Module& m) {
  if (m.hi <= m.lo) return;  // an empty range holds no address
  modules_.push_back(m);
  const Module* rec = &modules_.back();
  List& list = procs_[m.pid];
  // The first module ending after lo, and every one after it that starts before hi, overlap.
  auto first = std::upper_bound(list.begin(), list.end(), m.lo,
                                [](uint64_t lo, const Module* x) { return lo < x->hi; });
  auto last = first;
  while (last != list.end() && (*last)->lo < m.hi) ++last;
  list.insert(list.erase(first, last), rec);
}

void ModuleMap::observe(const Event& ev) {
  if (ev.sys == Sys::kFork && ev.child_pid != 0 && ev.child_pid != ev.pid) {
    // A child that has records of its own already (a ptrace trace may hold the child's first
    // events before the fork event) keeps them.
    auto parent = procs_.find(ev.pid);
    if (parent != procs_.end() && procs_.count(ev.child_pid) == 0) {
      List copy = parent->second;
      procs_[ev.child_pid] = std::move(copy);
    }
  } else if (ev.sys == Sys::kExecve) {
    procs_.erase(ev.pid);
  }
}

const Module* ModuleMap::find(int32_t pid, uint64_t addr) const {
  auto it = procs_.find(pid);
  if (it == procs_.end()) return nullptr;
  const List& list = it->second;
  auto m = std::upper_bound(list.begin(), list.end(), addr,
                            [](uint64_t a, const Module* x) { return a < x->hi; });
  if (m == list.end() || addr < (*m)->lo) return nullptr;
  return *m;
}

std::vector<const Module*> ModuleMap::of(int32_t pid) const {
  auto it = procs_.find(pid);
  return it == procs_.end() ? std::vector<const Module*>{} : it->second;
}

}  // namespace cudatool::trace
