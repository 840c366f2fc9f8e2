// The recorders' planner for RM allocation parameters sized by the class and for the buffers
// behind pointer members (src/rm/nv_ioctl_abi.h over src/rm/generated/rm_params.h): the C tables
// against the decoder's compiled tables, and plans for parameter structures declared here as
// NVIDIA's headers declare them (the compiler lays them out, not the generator).
#include <gtest/gtest.h>
#include <sys/ioctl.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "rm/nv_ioctl_abi.h"
#include "rm/tables.hpp"

namespace {

using cudatool::rm::PointerKind;
using cudatool::rm::Tables;

// src/common/sdk/nvidia/inc/nvos.h
struct NVOS64_PARAMETERS {
  uint32_t hRoot, hObjectParent, hObjectNew, hClass;
  alignas(8) uint64_t pAllocParms;
  alignas(8) uint64_t pRightsRequested;
  uint32_t paramsSize, flags, status;
};
struct NVOS54_PARAMETERS {
  uint32_t hClient, hObject, cmd, flags;
  alignas(8) uint64_t params;
  uint32_t paramsSize, status;
};
// ctrl/ctrl2080/ctrl2080gr.h (NV2080_CTRL_GR_INFO is NV0080_CTRL_GR_INFO: index, data)
struct NV2080_CTRL_GR_INFO {
  uint32_t index, data;
};
struct NV2080_CTRL_GR_GET_INFO_PARAMS {
  uint32_t grInfoListSize;
  alignas(8) uint64_t grInfoList;
  struct {
    uint32_t flags;
    alignas(8) uint64_t route;
  } grRouteInfo;
};
// ctrl/ctrl0000/ctrl0000system.h
struct NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_PARAMS {
  uint32_t sizeOfStrings;
  alignas(8) uint64_t pDriverVersionBuffer;
  alignas(8) uint64_t pVersionBuffer;
  alignas(8) uint64_t pTitleBuffer;
  uint32_t changelistNumber, officialChangelistNumber;
};
// ctrl/ctrl83de/ctrl83dedebug.h
struct NV83DE_CTRL_DEBUG_ACCESS_OP {
  alignas(8) uint64_t gpuVA;
  alignas(8) uint64_t pCpuVA;
  uint32_t size, valid;
};
struct NV83DE_CTRL_DEBUG_ACCESS_SURFACE_PARAMETERS {
  uint32_t count;
  NV83DE_CTRL_DEBUG_ACCESS_OP opsBuffer[64];  // MAX_ACCESS_OPS
};

constexpr uint32_t kBuildVersion = 0x101;      // NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION
constexpr uint32_t kGrGetInfo = 0x20801201;    // NV2080_CTRL_CMD_GR_GET_INFO
constexpr uint32_t kReadSurface = 0x83de031a;  // NV83DE_CTRL_CMD_READ_SURFACE

template <class T>
const uint8_t* bytes_of(const T& v) {
  return reinterpret_cast<const uint8_t*>(&v);
}

nvtr_buf_plan control_params(uint32_t cmd, uint64_t addr, uint32_t size) {
  NVOS54_PARAMETERS c{1, 2, cmd, 0, addr, size, 0};
  nvtr_buf_plan out[2];
  uint32_t req = _IOWR('F', NVTR_ESC_RM_CONTROL, NVOS54_PARAMETERS);
  EXPECT_EQ(
      nvtr_plan_nested(NVTR_DEV_RM, req, bytes_of(c), sizeof c, nvtr_rm_branch_for_major(580), out),
      1);
  return out[0];
}

std::vector<nvtr_buf_plan> pointees(const nvtr_buf_plan& p, const uint8_t* bytes, uint64_t len,
                                    int max = NVTR_MAX_POINTEES, int* dropped = nullptr) {
  std::vector<nvtr_buf_plan> out(static_cast<size_t>(max));
  int n =
      nvtr_plan_pointees(nvtr_rm_branch_for_major(580), &p, bytes, len, out.data(), max, dropped);
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string role(const nvtr_buf_plan& p) {
  char buf[128];
  nvtr_role_format(&p, buf, sizeof buf);
  return buf;
}

// rm_params.h (what the recorders read) holds exactly the decoder's class sizes and pointer
// rules, branch by branch.
TEST(RmParams, AreTheDecodersTables) {
  auto branches = cudatool::rm::all_branches();
  ASSERT_EQ(static_cast<size_t>(NVTR_RM_BRANCH_COUNT), branches.size());
  for (size_t b = 0; b < branches.size(); ++b) {
    const Tables& t = branches[b];
    const nvtr_rm_branch& c = nvtr_rm_branches[b];
    EXPECT_EQ(c.major, t.major());
    EXPECT_EQ(c.major, nvtr_uvm_branches[b].major);  // the same order as uvm_sizes.h
    size_t sized = 0;
    for (const cudatool::rm::ClassEntry& e : t.classes()) {
      uint32_t want = e.rm_class && e.alloc_params_size > 0 ? e.alloc_params_size : 0;
      EXPECT_EQ(nvtr_class_params_size(&c, e.id), want) << t.info().id << " " << e.name;
      sized += want != 0;
    }
    EXPECT_EQ(c.nclasses, sized);
    ASSERT_EQ(c.nrules, t.pointer_rules().size()) << t.info().id;
    EXPECT_GT(c.nrules, 40u);
    for (size_t i = 0; i < c.nrules; ++i) {
      const nvtr_ptr_rule& r = c.rules[i];
      const cudatool::rm::PointerRule& w = t.pointer_rules()[i];
      EXPECT_EQ(r.kind, w.kind);
      EXPECT_EQ(r.key, w.key);
      EXPECT_EQ(r.params_size, w.params_size);
      EXPECT_EQ(r.ptr, w.ptr_off);
      EXPECT_EQ(r.count, w.count_off0);
      EXPECT_EQ(r.count2, w.count_off1);
      EXPECT_EQ(r.count_size, w.count_size);
      EXPECT_EQ(r.elem, w.elem_size);
      EXPECT_EQ(r.array, w.array_off);
      EXPECT_EQ(r.array_stride, w.array_stride);
      EXPECT_EQ(r.array_max, w.array_max);
      EXPECT_EQ(r.array_count, w.array_count_off);
      EXPECT_EQ(r.cond, w.cond_off);
      EXPECT_EQ(r.cond_value, w.cond_value);
      EXPECT_EQ(r.cond_mask, w.cond_mask);
      EXPECT_EQ(r.flags, w.flags);
      EXPECT_EQ(std::string_view(r.role), w.role);
    }
  }
}

// libcuda 580 passes paramsSize 0 to every RM alloc: the plan takes the size RM gives the class
// in the recording's branch, and says so.
TEST(RmParams, AllocParametersSizedByTheClass) {
  const nvtr_rm_branch* rm = nvtr_rm_branch_for_major(580);
  uint32_t req = _IOWR('F', NVTR_ESC_RM_ALLOC, NVOS64_PARAMETERS);
  for (uint32_t cls : {0x3eu, 0x2080u, 0xc86fu}) {  // memory, subdevice, channel
    for (const char* driver : {"580.1", "535.1"}) {
      const cudatool::rm::ClassEntry* e = cudatool::rm::tables_for_driver(driver).find_class(cls);
      ASSERT_NE(e, nullptr);
      const nvtr_rm_branch* b = nvtr_rm_branch_for_major(nvtr_driver_major(driver));
      NVOS64_PARAMETERS a{1, 2, 3, cls, 0x5000, 0, 0, 0, 0};
      nvtr_buf_plan out[2];
      ASSERT_EQ(nvtr_plan_nested(NVTR_DEV_RM, req, bytes_of(a), sizeof a, b, out), 1);
      EXPECT_EQ(out[0].size, static_cast<uint64_t>(e->alloc_params_size)) << e->name;
      EXPECT_EQ(out[0].class_sized, 1);
      EXPECT_EQ(out[0].rule_kind, static_cast<uint32_t>(NVTR_RULE_ALLOC));
      EXPECT_EQ(out[0].rule_key, cls);
    }
  }
  // The sizes differ between branches (NV_MEMORY_ALLOCATION_PARAMS grew): the branch matters.
  EXPECT_NE(nvtr_class_params_size(nvtr_rm_branch_for_major(535), 0x3e),
            nvtr_class_params_size(nvtr_rm_branch_for_major(580), 0x3e));
  NVOS64_PARAMETERS given{1, 2, 3, 0x3e, 0x5000, 0, 24, 0, 0};  // paramsSize given: taken
  NVOS64_PARAMETERS null{1, 2, 3, 0x3e, 0, 0, 0, 0, 0};         // no pointer: nothing
  NVOS64_PARAMETERS unknown{1, 2, 3, 0xabcdef, 0x5000, 0, 0, 0, 0};
  nvtr_buf_plan out[2];
  ASSERT_EQ(nvtr_plan_nested(NVTR_DEV_RM, req, bytes_of(given), sizeof given, rm, out), 1);
  EXPECT_EQ(out[0].size, 24u);
  EXPECT_EQ(out[0].class_sized, 0);
  ASSERT_EQ(nvtr_plan_nested(NVTR_DEV_RM, req, bytes_of(null), sizeof null, rm, out), 1);
  EXPECT_EQ(out[0].size, 0u);
  ASSERT_EQ(nvtr_plan_nested(NVTR_DEV_RM, req, bytes_of(unknown), sizeof unknown, rm, out), 1);
  EXPECT_EQ(out[0].size, 0u);
  EXPECT_EQ(out[0].class_sized, 0);
}

TEST(RmParams, CountTimesElementBehindAPointer) {
  NV2080_CTRL_GR_GET_INFO_PARAMS p{};
  p.grInfoListSize = 5;
  p.grInfoList = 0x7f0000001000;
  nvtr_buf_plan params = control_params(kGrGetInfo, 0x7ffd0000, sizeof p);
  auto got = pointees(params, bytes_of(p), sizeof p);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(role(got[0]), "params.grInfoList");
  EXPECT_EQ(got[0].addr, p.grInfoList);
  EXPECT_EQ(got[0].size, 5 * sizeof(NV2080_CTRL_GR_INFO));
  EXPECT_EQ(got[0].count, 5u);
  EXPECT_EQ(got[0].elem, sizeof(NV2080_CTRL_GR_INFO));
  // The decoder's rule names the element type whose layout decodes it.
  const cudatool::rm::PointerRule* r = cudatool::rm::tables_for_driver("580.1").find_pointer_rule(
      PointerKind::kControl, kGrGetInfo, "params.grInfoList");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->elem_type, "NV2080_CTRL_GR_INFO");
  // Nothing for a NULL list, an empty list, a paramsSize RM would refuse, or short bytes.
  p.grInfoListSize = 0;
  EXPECT_TRUE(pointees(params, bytes_of(p), sizeof p).empty());
  p.grInfoListSize = 5;
  EXPECT_TRUE(
      pointees(control_params(kGrGetInfo, 0x7ffd0000, sizeof p - 8), bytes_of(p), sizeof p - 8)
          .empty());
  EXPECT_TRUE(pointees(params, bytes_of(p), sizeof p - 1).empty());
  p.grInfoList = 0;
  EXPECT_TRUE(pointees(params, bytes_of(p), sizeof p).empty());
  // A count past any cap: planned over the cap (the recorders record why, and read nothing).
  p.grInfoList = 0x7f0000001000;
  p.grInfoListSize = 0xffffffffu;
  got = pointees(params, bytes_of(p), sizeof p);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].size, 0xffffffffull * sizeof(NV2080_CTRL_GR_INFO));
  EXPECT_GT(got[0].size, static_cast<uint64_t>(NVTR_MAX_BUFFER));
}

// NV0000_CTRL_CMD_GPU_IDLE_CHANNELS (ctrl0000gpu.h): RM copies the three handle lists
// (numChannels x NvU32 each) only when the NVOS30_FLAGS_CHANNEL field (bits 7:4 of flags) says
// CHANNEL_LIST (0); for another field value (a single channel) nothing behind the pointers.
TEST(RmParams, ListsUnderABitFieldCondition) {
  struct Idle {
    uint32_t hDevice, hChannel, numChannels;
    uint64_t phClients __attribute__((aligned(8))), phDevices, phChannels;
    uint32_t flags, timeout;
  } p{};
  static_assert(sizeof(Idle) == 48);
  constexpr uint32_t kIdleChannels = 0x283;  // NV0000_CTRL_CMD_GPU_IDLE_CHANNELS
  const cudatool::rm::Tables& t = cudatool::rm::tables_for_driver("580.1");
  const cudatool::rm::StructEntry* s = t.find_struct("NV0000_CTRL_GPU_IDLE_CHANNELS_PARAMS");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->size, static_cast<int32_t>(sizeof p));
  for (const cudatool::rm::FieldEntry& f : t.fields(*s)) {
    if (f.name == "numChannels") {
      EXPECT_EQ(f.offset, offsetof(Idle, numChannels));
    }
    if (f.name == "phDevices") {
      EXPECT_EQ(f.offset, offsetof(Idle, phDevices));
    }
    if (f.name == "flags") {
      EXPECT_EQ(f.offset, offsetof(Idle, flags));
    }
  }
  p.numChannels = 3;
  p.phClients = 0x7f0000001000;
  p.phDevices = 0x7f0000002000;
  p.phChannels = 0x7f0000003000;
  p.flags = 0x3;  // other fields set, NVOS30_FLAGS_CHANNEL = LIST (0)
  nvtr_buf_plan params = control_params(kIdleChannels, 0x7ffd0000, sizeof p);
  auto got = pointees(params, bytes_of(p), sizeof p);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(role(got[0]), "params.phClients");
  EXPECT_EQ(role(got[1]), "params.phDevices");
  EXPECT_EQ(got[1].addr, p.phDevices);
  EXPECT_EQ(role(got[2]), "params.phChannels");
  for (const nvtr_buf_plan& g : got) EXPECT_EQ(g.size, 3u * 4u);
  p.flags = 0x13;  // NVOS30_FLAGS_CHANNEL = SINGLE (1): RM takes hChannel, no lists
  EXPECT_TRUE(pointees(params, bytes_of(p), sizeof p).empty());
}

// NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION: three strings of sizeOfStrings bytes each; the size
// query (NULL pointers) reads nothing.
TEST(RmParams, BuildVersionStrings) {
  NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_PARAMS p{64, 0x1000, 0x2000, 0x3000, 0, 0};
  nvtr_buf_plan params = control_params(kBuildVersion, 0x7ffd0000, sizeof p);
  auto got = pointees(params, bytes_of(p), sizeof p);
  ASSERT_EQ(got.size(), 3u);
  const char* roles[] = {"params.pDriverVersionBuffer", "params.pVersionBuffer",
                         "params.pTitleBuffer"};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(role(got[i]), roles[i]);
    EXPECT_EQ(got[i].addr, 0x1000u * (i + 1));
    EXPECT_EQ(got[i].size, 64u);
  }
  NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_PARAMS query{0, 0, 0, 0, 0, 0};
  EXPECT_TRUE(pointees(params, bytes_of(query), sizeof query).empty());
}

// A member of every element of an array (NV83DE_CTRL_DEBUG_ACCESS_OP::pCpuVA, `size` bytes),
// the first `count` elements; the role names the element; at most `max` plans.
TEST(RmParams, ArrayElementsAndTheLimitPerCall) {
  auto p = std::make_unique<NV83DE_CTRL_DEBUG_ACCESS_SURFACE_PARAMETERS>();
  std::memset(p.get(), 0, sizeof *p);
  p->count = 3;
  for (uint32_t i = 0; i < 64; ++i) {
    p->opsBuffer[i].pCpuVA = 0x10000 + 0x1000 * i;
    p->opsBuffer[i].size = 16 + i;
  }
  p->opsBuffer[1].pCpuVA = 0;  // a NULL element is skipped
  nvtr_buf_plan params = control_params(kReadSurface, 0x7ffd0000, sizeof *p);
  auto got = pointees(params, bytes_of(*p), sizeof *p);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(role(got[0]), "params.opsBuffer[0].pCpuVA");
  EXPECT_EQ(role(got[1]), "params.opsBuffer[2].pCpuVA");
  EXPECT_EQ(got[1].addr, 0x12000u);
  EXPECT_EQ(got[1].size, 18u);
  p->count = 1000;  // more than the array holds: its capacity, of which `max` are planned
  int dropped = 0;
  got = pointees(params, bytes_of(*p), sizeof *p, 8, &dropped);
  EXPECT_EQ(got.size(), 8u);
  EXPECT_EQ(dropped, 63 - 8);  // 64 elements, one NULL
}

TEST(RmParams, RoleFormatFitsItsBuffer) {
  nvtr_buf_plan p = nvtr_plan("params.opsBuffer[].pCpuVA", 1, 1, 0);
  p.index = 12345;
  char small[12];
  EXPECT_EQ(nvtr_role_format(&p, small, sizeof small), sizeof small - 1);
  EXPECT_EQ(std::string(small), "params.opsB");
  char big[64];
  nvtr_role_format(&p, big, sizeof big);
  EXPECT_EQ(std::string(big), "params.opsBuffer[12345].pCpuVA");
  // The decoder finds the rule of an element's role.
  EXPECT_NE(cudatool::rm::tables_for_driver("580.1").find_pointer_rule(PointerKind::kControl,
                                                                       kReadSurface, big),
            nullptr);
  EXPECT_EQ(cudatool::rm::tables_for_driver("580.1").find_pointer_rule(
                PointerKind::kControl, kReadSurface, "params.opsBuffer[x].pCpuVA"),
            nullptr);
}

}  // namespace
