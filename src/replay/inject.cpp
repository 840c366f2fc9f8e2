#include "replay/inject.hpp"

#include <fmt/format.h>
#include <cerrno>
#include <charconv>

namespace cudatool::replay {
namespace {

Error bad(std::string_view spec, std::string field, std::string reason) {
  return make_error(fmt::format("inject '{}'", spec), std::move(field), std::nullopt,
                    std::move(reason));
}

struct ErrnoName {
  std::string_view name;
  int value;
};
// The errors a kernel driver call may return (errno-base.h, errno.h of Linux).
constexpr ErrnoName kErrnos[] = {
    {"EPERM", EPERM},
    {"ENOENT", ENOENT},
    {"ESRCH", ESRCH},
    {"EINTR", EINTR},
    {"EIO", EIO},
    {"ENXIO", ENXIO},
    {"E2BIG", E2BIG},
    {"EBADF", EBADF},
    {"EAGAIN", EAGAIN},
    {"ENOMEM", ENOMEM},
    {"EACCES", EACCES},
    {"EFAULT", EFAULT},
    {"EBUSY", EBUSY},
    {"EEXIST", EEXIST},
    {"ENODEV", ENODEV},
    {"EINVAL", EINVAL},
    {"ENFILE", ENFILE},
    {"EMFILE", EMFILE},
    {"ENOTTY", ENOTTY},
    {"ENOSPC", ENOSPC},
    {"EPIPE", EPIPE},
    {"ERANGE", ERANGE},
    {"ENOSYS", ENOSYS},
    {"EOVERFLOW", EOVERFLOW},
    {"ETIMEDOUT", ETIMEDOUT},
    {"EOPNOTSUPP", EOPNOTSUPP},
    {"ENOTSUP", ENOTSUP},
};

}  // namespace

std::optional<uint64_t> parse_number(std::string_view s) {
  if (s.empty()) return std::nullopt;
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<int> parse_errno(std::string_view s) {
  for (const ErrnoName& e : kErrnos) {
    if (e.name == s) return e.value;
  }
  auto n = parse_number(s);
  if (n && *n > 0 && *n < 4096) return static_cast<int>(*n);
  return std::nullopt;
}

Result<Injection> parse_injection(std::string_view spec) {
  Injection inj;
  inj.text = std::string(spec);
  if (spec.empty()) return bad(spec, "", "empty spec");
  size_t pos = 0;
  bool have_nth = false;
  while (pos <= spec.size()) {
    size_t end = spec.find(',', pos);
    if (end == std::string_view::npos) end = spec.size();
    std::string_view item = spec.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) return bad(spec, "", "empty item (two commas, or a comma at an end)");
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return bad(spec, std::string(item), "expected key=value");
    }
    std::string_view key = item.substr(0, eq), val = item.substr(eq + 1);
    if (val.empty()) return bad(spec, std::string(key), "no value");
    auto number = [&](std::string_view what) -> Result<uint64_t> {
      auto n = parse_number(val);
      if (!n) return bad(spec, std::string(what), fmt::format("'{}' is not a number", val));
      return *n;
    };
    auto once = [&](bool set) -> Status {
      if (set) return bad(spec, std::string(key), "given twice");
      return Status::success();
    };
    if (key == "seq") {
      if (Status s = once(inj.seq.has_value()); !s.ok()) return s.error();
      auto n = number(key);
      if (!n) return n.error();
      inj.seq = *n;
    } else if (key == "cmd" || key == "class" || key == "call") {
      std::string& dst = key == "cmd" ? inj.cmd : key == "class" ? inj.cls : inj.call;
      if (Status s = once(!dst.empty()); !s.ok()) return s.error();
      dst = std::string(val);
    } else if (key == "nth") {
      if (Status s = once(have_nth); !s.ok()) return s.error();
      auto n = number(key);
      if (!n) return n.error();
      if (*n == 0 || *n > 0xffffffffu) return bad(spec, "nth", "counts from 1");
      inj.nth = static_cast<uint32_t>(*n);
      have_nth = true;
    } else if (key == "status") {
      if (Status s = once(!inj.status.empty()); !s.ok()) return s.error();
      inj.status = std::string(val);
    } else if (key == "member") {
      if (Status s = once(!inj.member.empty()); !s.ok()) return s.error();
      inj.member = std::string(val);
    } else if (key == "value") {
      if (Status s = once(inj.value.has_value()); !s.ok()) return s.error();
      auto n = number(key);
      if (!n) return n.error();
      inj.value = *n;
    } else if (key == "errno") {
      if (Status s = once(!inj.err.empty()); !s.ok()) return s.error();
      if (!parse_errno(val)) {
        return bad(spec, "errno", fmt::format("'{}' is neither an errno name nor 1..4095", val));
      }
      inj.err = std::string(val);
    } else if (key == "ret") {
      if (Status s = once(inj.ret.has_value()); !s.ok()) return s.error();
      bool neg = val[0] == '-';
      auto n = parse_number(neg ? val.substr(1) : val);
      if (!n || *n > static_cast<uint64_t>(INT64_MAX)) {
        return bad(spec, "ret", fmt::format("'{}' is not a number", val));
      }
      inj.ret = neg ? -static_cast<int64_t>(*n) : static_cast<int64_t>(*n);
    } else {
      return bad(spec, std::string(key),
                 "unknown key (seq, cmd, class, call, nth, status, member, value, errno, ret)");
    }
    if (end == spec.size()) break;
  }
  int selectors = inj.seq.has_value() + !inj.cmd.empty() + !inj.cls.empty() + !inj.call.empty();
  if (selectors == 0) return bad(spec, "", "no selector: give seq=, cmd=, class= or call=");
  if (selectors > 1) return bad(spec, "", "one selector only (seq, cmd, class or call)");
  if (inj.seq && have_nth) return bad(spec, "nth", "selects among cmd=/class=/call= matches");
  int effects = !inj.status.empty() + !inj.member.empty() + !inj.err.empty() + inj.ret.has_value();
  if (effects == 0) return bad(spec, "", "no effect: give status=, member=+value=, errno= or ret=");
  if (effects > 1) return bad(spec, "", "one effect only (status, member, errno or ret)");
  if (!inj.member.empty() && !inj.value) return bad(spec, "member", "needs value=");
  if (inj.value && inj.member.empty()) return bad(spec, "value", "belongs to member=");
  return inj;
}

}  // namespace cudatool::replay
