// The kernel-ABI surface's pieces on the committed tables: which raw values are requests, the
// roles of members, and layout differences between branches (NV_CHANNEL_ALLOC_PARAMS 535 → 580).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "analysis/abi_layout.hpp"
#include "analysis/abi_surface.hpp"
#include "rm/tables.hpp"

namespace cudatool {
namespace {

const rm::Tables& branch(std::string_view id) {
  const rm::Tables* t = rm::find_branch(id);
  EXPECT_NE(t, nullptr) << id;
  return *t;
}

std::vector<AbiCandidate> classify(const rm::Tables& t, uint64_t v, bool request_arg) {
  std::vector<AbiCandidate> out;
  classify_abi_value(t, v, request_arg, out);
  return out;
}

TEST(AbiSurfaceUnit, RequestsAreWhatTheBranchKnows) {
  const rm::Tables& t = branch("r580");
  auto esc = classify(t, 0xc020462a, false);  // _IOWR('F', NV_ESC_RM_CONTROL, NVOS54)
  ASSERT_EQ(esc.size(), 1u);
  EXPECT_EQ(esc[0].kind, AbiKind::kEscape);
  EXPECT_EQ(esc[0].value, 0x2au);
  EXPECT_EQ(esc[0].request_code, 0xc020462au);
  EXPECT_TRUE(classify(t, 0x0020462a, false).empty());  // no direction bits: not an ioctl word
  auto ctl = classify(t, 0x20800102, false);
  ASSERT_EQ(ctl.size(), 1u);
  EXPECT_EQ(ctl[0].kind, AbiKind::kControl);
  auto cls = classify(t, 0xc86f, false);
  ASSERT_EQ(cls.size(), 1u);
  EXPECT_EQ(cls[0].kind, AbiKind::kClass);
  // UVM's small requests count only as ioctl's request argument; UVM_INITIALIZE anywhere.
  ASSERT_NE(t.find_uvm(37), nullptr);
  auto uvm = classify(t, 37, true);
  ASSERT_EQ(uvm.size(), 1u);
  EXPECT_EQ(uvm[0].kind, AbiKind::kUvm);
  for (const auto& c : classify(t, 37, false)) EXPECT_NE(c.kind, AbiKind::kUvm);
  auto init = classify(t, 0x30000001, false);
  ASSERT_EQ(init.size(), 1u);
  EXPECT_EQ(init[0].kind, AbiKind::kUvm);
  EXPECT_TRUE(classify(t, 0x12345678, false).empty());
  EXPECT_TRUE(classify(t, 0x1'0000'0000ull, false).empty());
  for (AbiKind k : {AbiKind::kEscape, AbiKind::kControl, AbiKind::kClass, AbiKind::kUvm}) {
    AbiKind back{};
    ASSERT_TRUE(parse_abi_kind(abi_kind_name(k), &back));
    EXPECT_EQ(back, k);
  }
}

TEST(AbiLayoutUnit, RolesOfMembers) {
  const rm::Tables& t = branch("r580");
  AbiLayout alloc = abi_layout(t, AbiKind::kEscape, 0x2b);  // NV_ESC_RM_ALLOC
  EXPECT_EQ(alloc.params, "NVOS21_PARAMETERS");
  EXPECT_EQ(alloc.alt_params, "NVOS64_PARAMETERS");
  std::set<std::string> handles;
  for (const AbiMember* m : alloc.with_role(AbiMemberRole::kHandle)) handles.insert(m->name);
  EXPECT_TRUE(handles.contains("hRoot")) << alloc.members.size();
  EXPECT_TRUE(handles.contains("hObjectNew"));
  EXPECT_FALSE(alloc.simple());  // pAllocParms
  // GR_GET_INFO's grInfoList: followed, with the extent of its rule.
  AbiLayout gr = abi_layout(t, AbiKind::kControl, 0x20801201);
  ASSERT_EQ(gr.params, "NV2080_CTRL_GR_GET_INFO_PARAMS");
  auto ptrs = gr.with_role(AbiMemberRole::kPointer);
  ASSERT_EQ(ptrs.size(), 1u);
  EXPECT_EQ(ptrs[0]->name, "grInfoList");
  EXPECT_EQ(ptrs[0]->pointer_status, "followed");
  EXPECT_NE(ptrs[0]->points_to.find("grInfoListSize × NV2080_CTRL_GR_INFO"), std::string::npos)
      << ptrs[0]->points_to;
  // A control without parameters is simple, and its members are known (there are none).
  AbiLayout none = abi_layout(t, AbiKind::kControl, 0x20800145);
  EXPECT_TRUE(none.params.empty());
  EXPECT_TRUE(none.simple());
  EXPECT_TRUE(none.members_known);
}

// NV_CHANNEL_ALLOC_PARAMS (HOPPER_CHANNEL_GPFIFO_A's allocation parameters) between r535 and
// r580: every member of one side missing on the other is listed, sizes as the branches measured.
TEST(AbiLayoutUnit, ChannelAllocParams535To580) {
  const rm::Tables& a = branch("r535");
  const rm::Tables& b = branch("r580");
  AbiLayoutChange c = diff_abi_layout(a, b, AbiKind::kClass, 0xc86f);
  EXPECT_EQ(c.old_params, "NV_CHANNEL_ALLOC_PARAMS");
  EXPECT_EQ(c.new_params, "NV_CHANNEL_ALLOC_PARAMS");
  EXPECT_EQ(c.old_size, a.find_struct("NV_CHANNEL_ALLOC_PARAMS")->size);
  EXPECT_EQ(c.new_size, b.find_struct("NV_CHANNEL_ALLOC_PARAMS")->size);
  EXPECT_FALSE(c.empty());
  EXPECT_FALSE(c.unknown_members);
  AbiLayout la = abi_layout(a, AbiKind::kClass, 0xc86f),
            lb = abi_layout(b, AbiKind::kClass, 0xc86f);
  size_t only_new = 0, only_old = 0;
  for (const AbiMember& m : lb.members) {
    only_new += std::none_of(la.members.begin(), la.members.end(),
                             [&](const AbiMember& o) { return o.name == m.name; });
  }
  for (const AbiMember& m : la.members) {
    only_old += std::none_of(lb.members.begin(), lb.members.end(),
                             [&](const AbiMember& o) { return o.name == m.name; });
  }
  EXPECT_EQ(c.added.size(), only_new);
  EXPECT_EQ(c.removed.size(), only_old);
  // The same branch twice: nothing.
  EXPECT_TRUE(diff_abi_layout(b, b, AbiKind::kClass, 0xc86f).empty());
}

}  // namespace
}  // namespace cudatool
