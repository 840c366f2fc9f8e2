#include "ab/known.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "ab/compare.hpp"
#include "base/glob_match.h"

namespace cudatool::ab {
namespace {

bool call_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '*' || c == '?';
}

bool member_char(char c) {
  return call_char(c) || c == '.' || c == '+' || c == '[' || c == ']';
}

// A call's name as the report shows it starts with a capital (NV_ESC_…, UVM_…, NV2080_…).
bool looks_like_call(std::string_view s) {
  return !s.empty() && (s[0] == '*' || (s[0] >= 'A' && s[0] <= 'Z')) &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '*' ||
                  c == '?';
         });
}

Error bad(const std::string& origin, std::string_view spec, std::string why) {
  return make_error(origin, "", std::nullopt, fmt::format("'{}': {}", spec, why));
}

// '[' and ']' of a member are literal (params.gpuIds[1]), not a glob set.
std::string literal_brackets(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '[' || c == ']') out += '\\';
    out += c;
  }
  return out;
}

std::string without_indices(std::string_view f) {
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] == '[') {
      size_t j = f.find(']', i);
      if (j != std::string_view::npos) {
        i = j;
        continue;
      }
    }
    out += f[i];
  }
  return out;
}

bool glob(const std::string& pattern, const std::string& s) {
  return glob_match(pattern, s);
}

}  // namespace

Result<KnownDifference> parse_known(std::string_view spec, std::string origin) {
  KnownDifference k;
  k.spec = std::string(spec);
  k.origin = std::move(origin);
  if (spec.empty()) return bad(k.origin, spec, "empty");
  size_t colon = spec.find(':');
  std::string_view call =
      colon == std::string_view::npos ? std::string_view() : spec.substr(0, colon);
  std::string_view member = colon == std::string_view::npos ? spec : spec.substr(colon + 1);
  if (colon == std::string_view::npos && looks_like_call(spec)) {
    call = spec;
    member = {};
  }
  if (colon != std::string_view::npos && call.empty()) {
    return bad(k.origin, spec, "no call before ':' (CALL:MEMBER)");
  }
  if (!std::all_of(call.begin(), call.end(), call_char)) {
    return bad(k.origin, spec, "a call is a name like NV2080_CTRL_CMD_GR_GET_TPC_MASK or a glob");
  }
  if (!std::all_of(member.begin(), member.end(), member_char)) {
    return bad(k.origin, spec,
               "a member is a name like params.tpcMask, tpcMask or params.gpuIds[1]");
  }
  k.call = std::string(call);
  k.member = std::string(member);
  return k;
}

Result<std::vector<KnownDifference>> read_known_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(path, "", std::nullopt, "cannot be read");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_known_text(text, path);
}

Result<std::vector<KnownDifference>> parse_known_text(std::string_view text,
                                                      const std::string& name) {
  std::vector<KnownDifference> out;
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  size_t n = 0;
  while (!text.empty()) {
    ++n;
    size_t nl = text.find('\n');
    std::string_view s = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    s = s.substr(0, s.find('#'));
    while (!s.empty() && space(s.front())) s.remove_prefix(1);
    while (!s.empty() && space(s.back())) s.remove_suffix(1);
    if (s.empty()) continue;
    std::string origin = name + " line " + std::to_string(n);
    if (std::any_of(s.begin(), s.end(), space)) {
      return bad(origin, s, "one known difference per line (a comment starts with '#')");
    }
    auto k = parse_known(s, origin);
    if (!k) return k.error();
    out.push_back(std::move(*k));
  }
  return out;
}

bool known_member_matches(std::string_view member, std::string_view field) {
  std::string pattern = literal_brackets(member);
  std::string f(field), bare = without_indices(field);
  if (glob(pattern, f) || glob(pattern, bare)) return true;
  // A last name alone (tpcMask) names that member of any structure.
  if (member.find_first_of(".+") != std::string_view::npos) return false;
  size_t dot = bare.rfind('.');
  return dot != std::string::npos && glob(pattern, bare.substr(dot + 1));
}

bool known_call_matches(std::string_view call, const std::vector<std::string_view>& names) {
  std::string pattern(call);
  return std::any_of(names.begin(), names.end(), [&](std::string_view n) {
    return !n.empty() && glob(pattern, std::string(n));
  });
}

namespace {

std::vector<std::string_view> call_names(const NormEvent& e) {
  return {e.call, control_name(e), class_name(e)};
}

// "known differences hid 3 divergences and 1 member: NV2080_CTRL_CMD_GR_GET_TPC_MASK (--ignore):
// 3 divergences; tpcMask (m.txt line 2): 1 member; gpcMask (--ignore): nothing".
HeaderNote known_note(const std::vector<KnownDifference>& known) {
  uint64_t hid = 0, members = 0;
  std::string each;
  auto count = [](uint64_t n, std::string_view one, std::string_view many) {
    return fmt::format("{} {}", n, n == 1 ? one : many);
  };
  for (const KnownDifference& k : known) {
    hid += k.hid;
    members += k.members;
    std::string what;
    if (k.hid != 0) what = count(k.hid, "divergence", "divergences");
    if (k.members != 0) what += (what.empty() ? "" : ", ") + count(k.members, "member", "members");
    each += fmt::format("{}{} ({}): {}", each.empty() ? "" : "; ", k.spec, k.origin,
                        what.empty() ? "nothing" : what);
  }
  std::string total = count(hid, "divergence", "divergences");
  if (members != 0) total += " and " + count(members, "member", "members");
  HeaderNote n;
  n.what = "known";
  n.serious = false;
  n.message = "known differences hid " + total + ": " + each;
  return n;
}

bool call_is(const Comparison& c, const Divergence& d, const KnownDifference& k) {
  if (k.call.empty()) return true;
  return (d.a != kNone && known_call_matches(k.call, call_names(c.a->events[d.a]))) ||
         (d.b != kNone && known_call_matches(k.call, call_names(c.b->events[d.b])));
}

}  // namespace

void apply_known(Comparison& c, std::vector<KnownDifference> known) {
  c.known = std::move(known);
  if (c.known.empty()) return;
  std::vector<Divergence> kept;
  kept.reserve(c.divergences.size());
  for (Divergence& d : c.divergences) {
    KnownDifference* whole = nullptr;  // the first that hides it entirely
    std::vector<size_t> took(c.known.size(), 0);
    for (size_t i = 0; i < c.known.size() && whole == nullptr; ++i) {
      KnownDifference& k = c.known[i];
      if (!call_is(c, d, k)) continue;
      if (k.member.empty()) {
        whole = &k;
        break;
      }
      auto gone = std::remove_if(d.fields.begin(), d.fields.end(), [&](const FieldDiff& f) {
        return known_member_matches(k.member, f.field);
      });
      took[i] = static_cast<size_t>(d.fields.end() - gone);
      d.fields.erase(gone, d.fields.end());
      if (took[i] > 0 && d.fields.empty()) whole = &k;
    }
    if (whole != nullptr) {
      ++whole->hid;
      continue;
    }
    for (size_t i = 0; i < c.known.size(); ++i) c.known[i].members += took[i];
    d.answer = answer_only(d.kind, d.fields);
    kept.push_back(std::move(d));
  }
  c.divergences = std::move(kept);
  c.notes.push_back(known_note(c.known));
}

}  // namespace cudatool::ab
