// Whether a glob is well formed, for the options that take one (exports --filter, trace
// --devices and --env). The matchers (fnmatch(3), record/glob_match.h) take a malformed glob
// as literal bytes, so that '[' alone matches only a name holding '[': a typo then silently
// selects nothing. The syntax is theirs: '*', '?', '[…]' sets (ranges, a leading '!' or '^'
// negates, ']' first is a member) and '\' quoting the next character.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cudatool {

// Why `pattern` is not a well-formed glob, naming the character (1-based), or nullopt: a set
// that is never closed, a range that runs backwards ([z-a]), a '\' with nothing after it, an
// empty pattern.
std::optional<std::string> glob_problem(std::string_view pattern);

// The non-empty entries of a comma-separated list of globs, in order (views into `list`): the one
// reading of such a list, for the checks below and the matchers (record/devices).
std::vector<std::string_view> glob_list_entries(std::string_view list);

// The same for a comma-separated list of globs ("/dev/nvidia*,/tmp/x/*"): the first problem,
// naming the glob it is in. Empty entries are skipped, as the matchers skip them.
std::optional<std::string> glob_list_problem(std::string_view list);

// A list of path globs with each relative entry ("dev/*", "./fake/nvidia*") taken from `cwd`
// and made lexically normal ("/home/u/fake/nvidia*"): the paths a tracer matches are absolute,
// so a relative glob would never match. Entries that start with '/' or with a wildcard ('*',
// '?', '[') are kept as they are; empty entries are dropped.
std::string absolute_glob_list(std::string_view list, const std::string& cwd);

}  // namespace cudatool
