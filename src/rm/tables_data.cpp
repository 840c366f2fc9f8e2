// The generated tables of every branch (src/rm/generated/, made by
// tools/rm_tables/gen_rm_tables.py) compiled into constexpr arrays.
#include <array>

#include "rm/tables.hpp"

namespace cudatool::rm {
namespace gen {
#include "rm/generated/branches.inc"
}  // namespace gen

namespace {

#define CUDATOOL_RM_TABLES(ns)                                                                     \
  Tables(Tables::Data{&gen::ns::k_info[0], gen::ns::k_status, gen::ns::k_escapes, gen::ns::k_ctrl, \
                      gen::ns::k_categories, gen::ns::k_classes, gen::ns::k_uvm,                   \
                      gen::ns::k_structs, gen::ns::k_fields, gen::ns::k_pointers,                  \
                      gen::ns::k_pointer_members}),

const Tables kBranches[] = {CUDATOOL_RM_BRANCHES(CUDATOOL_RM_TABLES)};

#undef CUDATOOL_RM_TABLES

}  // namespace

std::span<const Tables> all_branches() {
  return kBranches;
}

}  // namespace cudatool::rm
