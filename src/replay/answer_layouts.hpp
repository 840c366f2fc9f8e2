// Internal to replay/: what the answer table carries of the driver branch's ABI, taken from the
// generated tables (rm/tables.hpp) by the rows of the call-semantics table (rm/call_semantics.hpp,
// which ab's normalisation reads calls by too), and the resolution of --inject member paths.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.hpp"
#include "record/shim_abi/replay_abi.h"
#include "rm/tables.hpp"
#include "trace/event.hpp"

namespace cudatool::replay::detail {

// One rp_escape per (escape, argument size) of the branch, sorted by nr then size.
std::vector<rp_escape> escape_layouts(const rm::Tables& t);
const rp_escape* find_escape(const std::vector<rp_escape>& v, uint32_t nr, uint32_t size);
// One rp_uvm per UVM ioctl, sorted by nr.
std::vector<rp_uvm> uvm_layouts(const rm::Tables& t);
// GPFIFO channel classes (allocation parameters NV_CHANNEL_ALLOC_PARAMS), with their sizes.
std::vector<rp_class_size> channel_classes(const rm::Tables& t);
rp_gpu_layout gpu_layout(const rm::Tables& t);

// The identity of a recorded ioctl and where its NV_STATUS lives, read from the bytes before the
// call as the shim reads a live one (replay_ioctl.c).
struct IoctlView {
  uint32_t nr = 0;
  bool xfer = false;               // the escape is inside an XFER (its argument: the xfer buffer)
  const rp_escape* esc = nullptr;  // nullptr: not an RM escape the tables lay out
  const rp_uvm* uvm = nullptr;
  uint32_t cmd = 0, cls = 0, h_client = 0, h_obj = 0, h_new = 0;
  int status_buf = -1;  // RP_BUF_ARG or RP_BUF_XFER, -1 when the call has no status member
  int32_t status_off = -1;
};
IoctlView view_ioctl(const trace::Event& ev, const std::vector<rp_escape>& escapes,
                     const std::vector<rp_uvm>& uvms);

// The buffer of an event a role names: RP_BUF_*; RP_BUF_MEMBER for "params.<member>"; -1 unknown.
int buffer_of_role(std::string_view role, bool xfer);

// Where an --inject member path points: a buffer of the event (a nested one by role), an offset
// and a width. Paths: "params.fbInfoList[3].data", "arg.hClass", "params+0x1c",
// "params.grInfoList+0x1c" (a buffer behind a pointer member, by byte offset).
struct MemberPlace {
  int buf = -1;      // RP_BUF_*; RP_BUF_MEMBER: `role` names the nested buffer
  std::string role;  // the event's buffer role ("params", "params.grInfoList")
  uint32_t offset = 0;
  uint32_t width = 0;  // 1, 2, 4 or 8
};
Result<MemberPlace> resolve_member(const rm::Tables& t, const trace::Event& ev, const IoctlView& v,
                                   std::string_view path);

}  // namespace cudatool::replay::detail
