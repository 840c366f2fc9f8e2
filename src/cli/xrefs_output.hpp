// Printing shared by `xrefs` and `index`: one reference as a table row or a JSON object, seen
// from its target (who refers) or from its source (what is referred to).
#pragma once

#include <string>
#include <vector>

#include "analysis/xref_query.hpp"
#include "analysis/xrefs.hpp"
#include "base/json_writer.hpp"

namespace cudatool::cli {

// "call", "tail_jump (jcc)", "load (call/jmp *)".
std::string kind_label(const Ref& r);
// "fn_1234+0x1a", or for a relocated pointer ".data.rel.ro (dispatch slot of cuInit)".
std::string site_owner(const XrefIndex& x, const DataNames& names, const Ref& r);
// "cuInit+0x4", "ioctl@plt", "\"text\"", ".bss", "GOT slot of stderr".
std::string target_text(const AddressInfo& a);
// A string for one line: quoted, with \n \t \r \" \\ escaped, cut at `max` characters.
std::string quoted(std::string_view s, size_t max = 80);

// {"site", "kind", "conditional", "branch", "function" | null, "function_start" | null,
//  "offset" | null, "section" | null, "slot_name" | null}
void write_ref_to_json(JsonWriter& w, const XrefIndex& x, const DataNames& names, const Ref& r);
// {"site", "kind", "conditional", "branch", "target", "target_kind", "target_name" | null,
//  "target_offset" | null, "target_section" | null, "string" | null}
void write_ref_from_json(JsonWriter& w, const XrefIndex& x, const DataNames& names, const Ref& r);
// "stats": {…} member.
void write_xref_stats_json(JsonWriter& w, const XrefIndex& x);
// Number of distinct functions among the references' sources.
size_t distinct_functions(const std::vector<const Ref*>& refs);

}  // namespace cudatool::cli
