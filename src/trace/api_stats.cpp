#include "trace/api_stats.hpp"

#include <algorithm>

namespace cudatool::trace {

bool is_device_call(const Event& ev) {
  switch (ev.sys) {
    case Sys::kOpen:
    case Sys::kClose:
    case Sys::kDup:
    case Sys::kIoctl:
    case Sys::kMmap:
    case Sys::kMunmap:
      return true;
    default:
      return false;
  }
}

void ApiStatsBuilder::add(const Event& ev, std::optional<std::string_view> api, bool failed,
                          std::string_view call) {
  if (!is_device_call(ev)) return;
  ++s_.device_calls;
  if (!ev.stack.empty()) ++s_.with_stack;
  if (!api) return;
  ++s_.attributed;
  auto it = by_api_.find(*api);
  if (it == by_api_.end()) it = by_api_.emplace(std::string(*api), Acc{}).first;
  Acc& a = it->second;
  ++a.row.device_calls;
  if (ev.sys == Sys::kIoctl) ++a.row.ioctls;
  if (failed) ++a.row.failed;
  if (ev.has_duration) a.row.dur_total_ns += ev.dur_ns;
  a.threads.emplace(ev.pid, ev.tid);
  std::string_view name = call.empty() ? sys_name(ev.sys) : call;
  auto c = a.calls.find(name);
  if (c == a.calls.end()) c = a.calls.emplace(std::string(name), 0).first;
  ++c->second;
}

ApiStats ApiStatsBuilder::finish() const {
  ApiStats s = s_;
  for (const auto& [name, a] : by_api_) {
    ApiRow row = a.row;
    row.api = name;
    row.threads = a.threads.size();
    row.calls.assign(a.calls.begin(), a.calls.end());
    std::stable_sort(row.calls.begin(), row.calls.end(),
                     [](const auto& x, const auto& y) { return x.second > y.second; });
    s.rows.push_back(std::move(row));
  }
  std::stable_sort(s.rows.begin(), s.rows.end(), [](const ApiRow& x, const ApiRow& y) {
    return x.device_calls > y.device_calls;
  });
  return s;
}

}  // namespace cudatool::trace
