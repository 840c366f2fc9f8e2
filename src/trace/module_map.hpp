// The module map of a trace (docs/trace-format.md, "Module records"): which ELF object of which
// process holds a code address, followed line by line as a trace is read.
//
// A trace states it incrementally: every module record precedes the first event whose stack
// needs it, a forked child inherits its parent's modules until it execs (or records its own,
// after a dlopen), and an exec starts the process afresh. So the map is fed in file order:
//
//   ModuleMap map;
//   while (reader.next(ev)) {
//     map.sync(reader.modules());   // the records that preceded `ev`
//     map.observe(ev);              // fork: the child inherits; execve: the process starts anew
//     const Module* m = map.find(ev.pid, ev.stack[0]);
//   }
//
// Lookups are binary searches in each process's sorted, non-overlapping list of ranges; a record
// whose range overlaps ones the process had replaces them (a library unloaded and another loaded
// in its place).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "trace/event.hpp"

namespace cudatool::trace {

class ModuleMap {
 public:
  // Adds the records of `all` (TraceReader::modules(), which only grows) not seen yet.
  void sync(const std::vector<Module>& all);
  // Adds one record, for its pid.
  void add(const Module& m);
  // Follows process events: kFork gives the child a copy of the parent's modules (unless it has
  // records of its own already), kExecve empties the process's list (the records of the new
  // image follow the event).
  void observe(const Event& ev);
  // The module of process `pid` whose [lo, hi) holds `addr`, or null.
  [[nodiscard]] const Module* find(int32_t pid, uint64_t addr) const;
  // The modules process `pid` has now, by address.
  [[nodiscard]] std::vector<const Module*> of(int32_t pid) const;
  // Records added in all.
  [[nodiscard]] size_t records() const { return modules_.size(); }

 private:
  // Sorted by lo, not overlapping. Records live in modules_, a deque: pointers stay valid.
  using List = std::vector<const Module*>;
  std::deque<Module> modules_;
  std::unordered_map<int32_t, List> procs_;
  size_t synced_ = 0;
};

}  // namespace cudatool::trace
