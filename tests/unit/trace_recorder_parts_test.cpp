// Parts of the recorders that can be checked without tracing: the NVIDIA layouts against the C
// compiler's own struct layout, buffer planning, the device glob list, the seccomp
// filter against the kernel, memory reads against mprotect, the mapping table.
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "base/glob_match.h"
#include "record/devices.hpp"
#include "record/seccomp_filter.hpp"
#include "record/tracee_memory.hpp"
#include "rm/nv_ioctl_abi.h"
#include "rm/tables.hpp"

namespace cudatool::record {
namespace {

using trace::Buffer;

// NVIDIA's structures, declared as nvos.h and nv-ioctl.h declare them (NvP64 is an 8-aligned
// 64-bit value): the compiler computes the offsets the recorder hard-codes.
struct NVOS54_PARAMETERS {
  uint32_t hClient, hObject, cmd, flags;
  alignas(8) uint64_t params;
  uint32_t paramsSize, status;
};
struct NVOS21_PARAMETERS {
  uint32_t hRoot, hObjectParent, hObjectNew, hClass;
  alignas(8) uint64_t pAllocParms;
  uint32_t paramsSize, status;
};
struct NVOS64_PARAMETERS {
  uint32_t hRoot, hObjectParent, hObjectNew, hClass;
  alignas(8) uint64_t pAllocParms;
  alignas(8) uint64_t pRightsRequested;
  uint32_t paramsSize, flags, status;
};
struct nv_ioctl_xfer_t {
  uint32_t cmd, size;
  alignas(8) uint64_t ptr;
};

TEST(NvIoctlAbi, OffsetsMatchTheStructures) {
  EXPECT_EQ(sizeof(NVOS54_PARAMETERS), NVTR_NVOS54_SIZE);
  EXPECT_EQ(offsetof(NVOS54_PARAMETERS, params), NVTR_NVOS54_PARAMS);
  EXPECT_EQ(offsetof(NVOS54_PARAMETERS, paramsSize), NVTR_NVOS54_PARAMS_SIZE);
  EXPECT_EQ(sizeof(NVOS21_PARAMETERS), NVTR_NVOS21_SIZE);
  EXPECT_EQ(offsetof(NVOS21_PARAMETERS, pAllocParms), NVTR_NVOS21_ALLOC_PARMS);
  EXPECT_EQ(offsetof(NVOS21_PARAMETERS, paramsSize), NVTR_NVOS21_PARAMS_SIZE);
  EXPECT_EQ(sizeof(NVOS64_PARAMETERS), NVTR_NVOS64_SIZE);
  EXPECT_EQ(offsetof(NVOS64_PARAMETERS, pAllocParms), NVTR_NVOS64_ALLOC_PARMS);
  EXPECT_EQ(offsetof(NVOS64_PARAMETERS, pRightsRequested), NVTR_NVOS64_RIGHTS);
  EXPECT_EQ(offsetof(NVOS64_PARAMETERS, paramsSize), NVTR_NVOS64_PARAMS_SIZE);
  EXPECT_EQ(sizeof(nv_ioctl_xfer_t), NVTR_XFER_SIZE);
  EXPECT_EQ(offsetof(nv_ioctl_xfer_t, size), NVTR_XFER_ARG_SIZE);
  EXPECT_EQ(offsetof(nv_ioctl_xfer_t, ptr), NVTR_XFER_PTR);
  // The request numbers the real captures show (0xc020462a RM control, 0xc030462b RM alloc).
  EXPECT_EQ(_IOWR('F', NVTR_ESC_RM_CONTROL, NVOS54_PARAMETERS), 0xc020462au);
  EXPECT_EQ(_IOWR('F', NVTR_ESC_RM_ALLOC, NVOS64_PARAMETERS), 0xc030462bu);
}

TEST(NvIoctlAbi, PlansNestedBuffers) {
  NVOS54_PARAMETERS c{1, 2, 0x20800101, 0, 0x7ffd1000, 48, 0};
  nvtr_buf_plan out[2];
  const nvtr_rm_branch* rm = nvtr_rm_branch_for_major(580);
  uint32_t req = _IOWR('F', NVTR_ESC_RM_CONTROL, NVOS54_PARAMETERS);
  auto* bytes = reinterpret_cast<const uint8_t*>(&c);
  ASSERT_EQ(nvtr_plan_nested(NVTR_DEV_RM, req, bytes, sizeof c, rm, out), 1);
  EXPECT_STREQ(out[0].role, "params");
  EXPECT_EQ(out[0].addr, 0x7ffd1000u);
  EXPECT_EQ(out[0].size, 48u);
  // Not on a UVM node, not with a short read of the argument.
  EXPECT_EQ(nvtr_plan_nested(NVTR_DEV_UVM, req, bytes, sizeof c, rm, out), 0);
  EXPECT_EQ(nvtr_plan_nested(NVTR_DEV_RM, req, bytes, 16, rm, out), 0);
  NVOS64_PARAMETERS a{1, 2, 3, 0x2080, 0x5000, 0x6000, 24, 0, 0};
  req = _IOWR('F', NVTR_ESC_RM_ALLOC, NVOS64_PARAMETERS);
  ASSERT_EQ(
      nvtr_plan_nested(NVTR_DEV_RM, req, reinterpret_cast<const uint8_t*>(&a), sizeof a, rm, out),
      2);
  EXPECT_EQ(out[0].size, 24u);
  EXPECT_STREQ(out[1].role, "rights");
  EXPECT_EQ(out[1].addr, 0x6000u);
  nv_ioctl_xfer_t x{NVTR_ESC_RM_CONTROL, sizeof c, 0x8000};
  req = _IOWR('F', NVTR_ESC_IOCTL_XFER_CMD, nv_ioctl_xfer_t);
  ASSERT_EQ(
      nvtr_plan_nested(NVTR_DEV_RM, req, reinterpret_cast<const uint8_t*>(&x), sizeof x, rm, out),
      1);
  EXPECT_STREQ(out[0].role, "xfer");
  EXPECT_EQ(out[0].size, sizeof c);
  ASSERT_EQ(nvtr_plan_xfer_inner(reinterpret_cast<const uint8_t*>(&x), bytes, sizeof c, rm, out),
            1);
  EXPECT_EQ(out[0].addr, 0x7ffd1000u);
  // UVM: no size in the request; the table of the branch gives it, else a bounded read.
  const nvtr_uvm_branch* uvm = nvtr_uvm_branch_for_major(580);
  const rm::UvmEntry* init = rm::tables_for_driver("580.1").find_uvm(0x30000001);
  ASSERT_NE(init, nullptr);
  nvtr_buf_plan p = nvtr_plan_arg(NVTR_DEV_UVM, 0x30000001, 0x1234, uvm);
  EXPECT_EQ(p.bounded, 0);
  EXPECT_EQ(p.size, static_cast<uint64_t>(init->params_size));
  p = nvtr_plan_arg(NVTR_DEV_UVM, 0x541b, 0x1234, uvm);  // FIONREAD: not a UVM request
  EXPECT_EQ(p.bounded, 1);
  EXPECT_EQ(p.size, NVTR_UVM_BOUNDED_READ);
  p = nvtr_plan_arg(NVTR_DEV_UVM, 0x30000001, 0x1234, nullptr);  // no table
  EXPECT_EQ(p.bounded, 1);
  EXPECT_EQ(nvtr_plan_arg(NVTR_DEV_RM, 0x5401, 0, uvm).size, 0u);  // no size in the request
}

// The recorders' C table (src/rm/generated/uvm_sizes.h) against the decoder's compiled tables:
// every measured UVM size of every branch, and nothing else.
TEST(NvIoctlAbi, UvmSizesAreTheDecodersTables) {
  auto branches = rm::all_branches();
  ASSERT_EQ(static_cast<size_t>(NVTR_UVM_BRANCH_COUNT), branches.size());
  for (size_t b = 0; b < branches.size(); ++b) {
    const rm::Tables& t = branches[b];
    const nvtr_uvm_branch& c = nvtr_uvm_branches[b];
    EXPECT_EQ(c.major, t.major());
    EXPECT_EQ(std::string_view(c.release), t.info().version);
    size_t measured = 0;
    for (const rm::UvmEntry& u : t.uvm_ioctls()) {
      int64_t got = nvtr_uvm_param_size(&c, u.nr);
      if (u.params_size < 0) {
        EXPECT_EQ(got, -1) << u.name;
        continue;
      }
      ++measured;
      EXPECT_EQ(got, u.params_size) << t.info().id << " " << u.name;
    }
    EXPECT_EQ(c.count, measured) << t.info().id;
    for (uint32_t r : {0u, 0xffffffffu, 0x541bu}) {
      if (t.find_uvm(r) == nullptr) {
        EXPECT_EQ(nvtr_uvm_param_size(&c, r), -1);
      }
    }
  }
  // The sizes really differ between branches: the choice matters.
  const rm::UvmEntry* a = rm::tables_for_driver("535.1").find_uvm(0x21);
  const rm::UvmEntry* z = rm::tables_for_driver("580.1").find_uvm(0x21);
  ASSERT_TRUE(a && z);
  EXPECT_NE(a->params_size, z->params_size) << "UVM_MAP_EXTERNAL_ALLOCATION";
}

// The recorders choose the branch as the decoder does (rm::choose_branch), for every major and
// for the texts a version file holds.
TEST(NvIoctlAbi, BranchChoiceIsTheDecoders) {
  for (int major = 1; major < 1200; ++major) {
    std::string v = std::to_string(major) + ".12.3";
    int parsed = nvtr_driver_major(v.c_str());
    rm::BranchChoice c = rm::choose_branch(v);
    EXPECT_EQ(parsed, c.driver_major) << v;
    EXPECT_EQ(nvtr_uvm_branch_for_major(parsed)->major, c.tables->major()) << v;
  }
  for (const char* text :
       {"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
        "(dvs-builder@U16-I1-N07-12-3)  Thu Jan  1 00:00:00 UTC 2026",
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.261.03  Wed Jul 16 2025", "",
        "no version here", "12.3 4.5", "x86_64 1.2.3", "555.58", "v550.1", "9999999999999.1",
        "2147483647.1", "2147483648.1"}) {
    int parsed = nvtr_driver_major(text);
    rm::BranchChoice c = rm::choose_branch(text);
    EXPECT_EQ(parsed, c.driver_major) << text;
    EXPECT_EQ(nvtr_uvm_branch_for_major(parsed)->major, c.tables->major()) << text;
  }
  EXPECT_EQ(nvtr_uvm_branch_for_major(0), &nvtr_uvm_branches[NVTR_UVM_BRANCH_COUNT - 1]);
}

TEST(NvIoctlAbi, DeviceKinds) {
  EXPECT_EQ(nvtr_dev_kind_of_path("/dev/nvidiactl"), NVTR_DEV_RM);
  EXPECT_EQ(nvtr_dev_kind_of_path("/dev/nvidia0"), NVTR_DEV_RM);
  EXPECT_EQ(nvtr_dev_kind_of_path("/dev/nvidia12"), NVTR_DEV_RM);
  EXPECT_EQ(nvtr_dev_kind_of_path("/dev/nvidia-uvm"), NVTR_DEV_UVM);
  EXPECT_EQ(nvtr_dev_kind_of_path("/dev/nvidia-uvm-tools"), NVTR_DEV_UVM);
  EXPECT_EQ(nvtr_dev_kind_of_path("/dev/nvidia-modeset"), NVTR_DEV_OTHER);
  EXPECT_EQ(nvtr_dev_kind_of_path("/dev/nvidia0x"), NVTR_DEV_OTHER);
}

// The matcher itself is held against fnmatch(3) in glob_match_test.cpp.
TEST(DeviceGlob, ListOfGlobs) {
  DeviceMatcher m("/dev/nvidia*,/tmp/fake/*");
  EXPECT_TRUE(m.matches("/dev/nvidia-caps/nvidia-cap1"));
  EXPECT_TRUE(m.matches("/tmp/fake/nvidiactl"));
  EXPECT_FALSE(m.matches("/dev/null"));
  EXPECT_FALSE(DeviceMatcher("").matches("/dev/nvidia0"));
}

TEST(SeccompFilter, StopsExactlyTheCallsThatMatter) {
  // Without a tracer, SECCOMP_RET_TRACE fails a call with ENOSYS: a child installs the filter and
  // reports which calls were caught.
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    int devnull = open("/dev/null", O_RDWR);
    if (install_filter(recorder_filter()) != 0) _exit(99);
    auto caught = [](long r) { return r == -1 && errno == ENOSYS ? '1' : '0'; };
    char res[16];
    int n = 0;
    res[n++] = caught(syscall(SYS_getpid));
    res[n++] = caught(syscall(SYS_ioctl, devnull, 0x5401, 0));
    res[n++] = caught(syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY));
    res[n++] = caught(syscall(SYS_close, 1000));
    res[n++] = caught(syscall(SYS_dup, devnull));
    res[n++] = caught(syscall(SYS_fcntl, devnull, F_GETFL));
    res[n++] = caught(syscall(SYS_fcntl, devnull, F_DUPFD_CLOEXEC, 0));
    res[n++] = caught(syscall(SYS_mmap, 0, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    res[n++] = caught(syscall(SYS_mmap, 0, 4096, PROT_READ, MAP_PRIVATE, devnull, 0));
    res[n++] = caught(syscall(SYS_munmap, 0x10000, 4096));
    res[n++] = caught(syscall(SYS_read, devnull, res, 0));
    res[n++] = caught(syscall(SYS_execve, "/nonexistent", nullptr, nullptr));
    (void)!write(fds[1], res, static_cast<size_t>(n));
    _exit(0);
  }
  close(fds[1]);
  char res[16] = {};
  ssize_t n = read(fds[0], res, sizeof res);
  close(fds[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child status " << st;
  //                       getpid ioctl openat close dup getfl dupfd anon file munmap read execve
  EXPECT_EQ(std::string(res, static_cast<size_t>(n)), "011110101101");
}

TEST(TraceeMemory, ReadsStopAtTheFirstUnreadablePage) {
  auto* page = static_cast<uint8_t*>(
      mmap(nullptr, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(page, MAP_FAILED);
  ASSERT_EQ(mprotect(page + 2 * 4096, 4096, PROT_NONE), 0);
  for (int i = 0; i < 2 * 4096; ++i) page[i] = static_cast<uint8_t>(i * 7);
  std::vector<uint8_t> out(3 * 4096);
  auto start = reinterpret_cast<uint64_t>(page) + 100;
  ReadResult r = read_tracee(getpid(), start, out.data(), 3 * 4096 - 200);
  EXPECT_EQ(r.got, 2u * 4096 - 100);
  EXPECT_EQ(r.err, EFAULT);
  EXPECT_EQ(std::memcmp(out.data(), page + 100, r.got), 0);
  EXPECT_EQ(read_tracee(getpid(), 0, out.data(), 8).got, 0u);
  auto reader = [](uint64_t a, uint8_t* o, uint64_t n) { return read_tracee(getpid(), a, o, n); };
  Buffer b;
  nvtr_buf_plan bounded =
      nvtr_plan("arg", reinterpret_cast<uint64_t>(page) + 2 * 4096 - 8, 4096, 1);
  fill_buffer(reader, bounded, 1 << 20, false, b);
  EXPECT_EQ(b.before.size(), 8u);
  EXPECT_TRUE(b.before_error.empty());
  nvtr_buf_plan exact = nvtr_plan("params", bounded.addr, 64, 0);
  fill_buffer(reader, exact, 1 << 20, true, b);
  EXPECT_EQ(b.after.size(), 8u);
  EXPECT_EQ(b.after_error, "EFAULT after 8 of 64 bytes");
  nvtr_buf_plan huge = nvtr_plan("params", bounded.addr, 0x40000000, 0);
  fill_buffer(reader, huge, 16 << 20, false, b);
  EXPECT_EQ(b.before_error, "size 0x40000000 over cap 0x1000000");
  EXPECT_TRUE(b.before.empty());
  nvtr_buf_plan zero = nvtr_plan("params", 0x10, 0, 0);
  fill_buffer(reader, zero, 16 << 20, false, b);
  EXPECT_TRUE(b.before.empty() && b.before_error.empty());
  munmap(page, 3 * 4096);
}

TEST(Devices, MappingTableSplitsOnPartialUnmap) {
  MappingTable m;
  m[0x10000] = DeviceMapping{0x4000, 7};
  EXPECT_TRUE(overlaps(m, 0x11000, 0x10));
  EXPECT_FALSE(overlaps(m, 0x14000, 0x1000));
  EXPECT_EQ(unmap_range(m, 0x11000, 0x1000), 7);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m.at(0x10000).len, 0x1000u);
  EXPECT_EQ(m.at(0x12000).len, 0x2000u);
  EXPECT_EQ(unmap_range(m, 0x20000, 0x1000), -1);
  EXPECT_EQ(unmap_range(m, 0, 0x100000), 7);
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(absolute_path("/home/u", "../dev/./nvidia0"), "/home/dev/nvidia0");
  EXPECT_EQ(absolute_path("/", "/dev//nvidiactl"), "/dev/nvidiactl");
}

}  // namespace
}  // namespace cudatool::record
