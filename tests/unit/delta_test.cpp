#include <gtest/gtest.h>

#include "analysis/delta.hpp"

namespace cudatool {
namespace {

FunctionFact fn(uint64_t start, uint64_t size, std::string name, uint64_t fp) {
  return FunctionFact{start, size, std::move(name), fp};
}

TEST(DeltaLogic, FunctionsMatchedByCodeThenByName) {
  BuildFacts a, b;
  a.functions = FunctionFacts{};
  b.functions = FunctionFacts{};
  // Same code at other addresses (unchanged), a named function whose code changed, a duplicate
  // fingerprint counted as a multiset, one function gone, two new.
  a.functions->functions = {fn(0x100, 10, "", 1), fn(0x200, 20, "cuInit", 2), fn(0x300, 5, "", 7),
                            fn(0x400, 5, "", 7), fn(0x500, 9, "", 9)};
  b.functions->functions = {fn(0x1100, 10, "", 1), fn(0x1200, 64, "cuInit", 3),
                            fn(0x1300, 5, "", 7), fn(0x1400, 8, "", 11), fn(0x1500, 8, "", 12)};
  a.functions->count = a.functions->functions.size();
  b.functions->count = b.functions->functions.size();
  Delta d = compute_delta(a, b);
  ASSERT_TRUE(d.functions);
  EXPECT_EQ(d.functions->unchanged, 2u);  // fp 1 and one of the two fp 7
  EXPECT_EQ(d.functions->changed, 1u);    // cuInit
  EXPECT_EQ(d.functions->added, 2u);      // fp 11, 12
  EXPECT_EQ(d.functions->removed, 2u);    // the second fp 7, fp 9
  ASSERT_EQ(d.functions->largest_movers.size(), 1u);
  EXPECT_EQ(d.functions->largest_movers[0].name, "cuInit");
  Delta r = compute_delta(b, a);
  EXPECT_EQ(r.functions->unchanged, d.functions->unchanged);
  EXPECT_EQ(r.functions->added, d.functions->removed);
  EXPECT_EQ(r.functions->removed, d.functions->added);
}

TEST(DeltaLogic, ExportsGroupedByBase) {
  BuildFacts a, b;
  auto ex = [](std::string name, std::string base, uint32_t v, std::string var) {
    ExportFact e;
    e.name = std::move(name);
    e.base = std::move(base);
    e.api_version = v;
    e.variant = std::move(var);
    return e;
  };
  a.exports = {ex("cuCtxCreate_v2", "cuCtxCreate", 2, ""), ex("cuOld", "cuOld", 0, "")};
  b.exports = {ex("cuCtxCreate_v2", "cuCtxCreate", 2, ""),
               ex("cuCtxCreate_v3", "cuCtxCreate", 3, ""),
               ex("cuCtxCreate_v2_ptsz", "cuCtxCreate", 2, "ptsz"), ex("cuNew", "cuNew", 0, "")};
  Delta d = compute_delta(a, b);
  ASSERT_EQ(d.apis_added.size(), 1u);
  EXPECT_EQ(d.apis_added[0].base, "cuNew");
  ASSERT_EQ(d.apis_removed.size(), 1u);
  ASSERT_EQ(d.new_api_versions.size(), 1u);
  EXPECT_EQ(d.new_api_versions[0].names, std::vector<std::string>{"cuCtxCreate_v3"});
  ASSERT_EQ(d.new_variants.size(), 1u);
  EXPECT_EQ(d.new_variants[0].names, std::vector<std::string>{"cuCtxCreate_v2_ptsz"});
  EXPECT_FALSE(d.interface_unchanged());
}

TEST(DeltaLogic, TablesAndCubins) {
  BuildFacts a, b;
  a.tables = TableFacts{};
  b.tables = TableFacts{};
  a.tables->procaddress = {{"cuMemAlloc", 3020, "default", "cuMemAlloc_v2"},
                           {"cuGone", 1000, "default", ""}};
  b.tables->procaddress = {{"cuMemAlloc", 3020, "legacy", "cuMemAlloc_v2"},
                           {"cuNew", 12000, "default", ""}};
  a.tables->errors = {{1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"}};
  b.tables->errors = {{1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
                      {999, "CUDA_ERROR_UNKNOWN", "unknown"}};
  a.tables->export_tables = {{"6bd5fb6c-5bf4-e74a-8987-d93912fd9df9", "runtime", 10, 80}};
  b.tables->export_tables = {{"6bd5fb6c-5bf4-e74a-8987-d93912fd9df9", "runtime", 12, 96}};
  a.cubins = CubinFacts{};
  b.cubins = CubinFacts{};
  a.cubins->images_per_arch = {{"sm_35", 3}, {"sm_90", 2}};
  b.cubins->images_per_arch = {{"sm_90", 4}, {"sm_100", 1}};
  a.cubins->kernels_per_family = {{"memset", {"k1", "k2"}}};
  b.cubins->kernels_per_family = {{"memset", {"k2", "k3"}}, {"graph", {"g"}}};
  Delta d = compute_delta(a, b);
  EXPECT_EQ(d.tables->procaddress_added, std::vector<std::string>{"cuNew @ 12000"});
  EXPECT_EQ(d.tables->procaddress_removed, std::vector<std::string>{"cuGone @ 1000"});
  ASSERT_EQ(d.tables->procaddress_changed.size(), 1u);
  EXPECT_EQ(d.tables->errors_added, std::vector<std::string>{"999 CUDA_ERROR_UNKNOWN"});
  ASSERT_EQ(d.tables->export_tables_changed.size(), 1u);
  EXPECT_EQ(d.cubins->archs_added, std::vector<std::string>{"sm_100"});
  EXPECT_EQ(d.cubins->archs_removed, std::vector<std::string>{"sm_35"});
  EXPECT_EQ(d.cubins->images_per_arch.at("sm_90"), std::make_pair(uint64_t{2}, uint64_t{4}));
  EXPECT_EQ(d.cubins->kernels_added.at("memset"), std::vector<std::string>{"k3"});
  EXPECT_EQ(d.cubins->kernels_removed.at("memset"), std::vector<std::string>{"k1"});
  EXPECT_EQ(d.cubins->families_added, std::vector<std::string>{"graph"});
}

TEST(DeltaLogic, VersionOrder) {
  EXPECT_TRUE(version_less("535.261.03", "550.54.09"));
  EXPECT_TRUE(version_less("550.54.09", "550.163.01"));
  EXPECT_FALSE(version_less("555.58.02", "550.163.01"));
  EXPECT_TRUE(version_less("470.256.02", "535.86.06"));
}

}  // namespace
}  // namespace cudatool
