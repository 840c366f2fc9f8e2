// The RM table API (sorted lookups, branch choice) and the decoders on synthetic events. Events
// are built with the generated layouts of the branch (member offsets are looked up, not typed
// in), so the tests hold for every branch; the real captures and Debian's headers are checked in
// tests/integration/rm_*_test.cpp.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/bytes.hpp"
#include "base/json_writer.hpp"
#include "rm/tables.hpp"
#include "rm_synth.hpp"
#include "trace/decode.hpp"

namespace cudatool::rm {
namespace {

using trace::decode_event;
using trace::Decoded;
using trace::format_line;

template <class T, class K>
void expect_sorted_unique(std::span<const T> table, K key, const char* what) {
  for (size_t i = 1; i < table.size(); ++i) {
    ASSERT_LT(key(table[i - 1]), key(table[i])) << what << " entry " << i;
  }
}

TEST(RmTables, EveryBranchIsSortedAndFindsEveryEntry) {
  ASSERT_GE(all_branches().size(), 4u);
  for (const Tables& t : all_branches()) {
    SCOPED_TRACE(std::string(t.info().version));
    expect_sorted_unique(
        t.statuses(), [](auto& e) { return e.value; }, "status");
    expect_sorted_unique(
        t.escapes(), [](auto& e) { return e.nr; }, "escape");
    expect_sorted_unique(
        t.controls(), [](auto& e) { return e.id; }, "control");
    expect_sorted_unique(
        t.categories(), [](auto& e) { return e.id; }, "category");
    expect_sorted_unique(
        t.classes(), [](auto& e) { return e.id; }, "class");
    expect_sorted_unique(
        t.uvm_ioctls(), [](auto& e) { return e.nr; }, "uvm");
    expect_sorted_unique(
        t.structs(), [](auto& e) { return e.name; }, "struct");
    for (const auto& e : t.statuses()) EXPECT_EQ(t.find_status(e.value), &e);
    for (const auto& e : t.escapes()) EXPECT_EQ(t.find_escape(e.nr), &e);
    for (const auto& e : t.controls()) EXPECT_EQ(t.find_control(e.id), &e);
    for (const auto& e : t.classes()) EXPECT_EQ(t.find_class(e.id), &e);
    for (const auto& e : t.uvm_ioctls()) EXPECT_EQ(t.find_uvm(e.nr), &e);
    for (const auto& s : t.structs()) {
      ASSERT_EQ(t.find_struct(s.name), &s);
      EXPECT_EQ(t.fields(s).size(), s.field_count) << s.name;
      for (const FieldEntry& f : t.fields(s)) {
        EXPECT_LE(f.offset + f.size, static_cast<uint32_t>(s.size)) << s.name << "." << f.name;
        EXPECT_EQ(t.find_field(s, f.name), &f);
      }
    }
    // Every control id is named by an interface or by itself.
    for (const auto& c : t.controls()) EXPECT_FALSE(c.name.empty());
    EXPECT_EQ(t.find_control(0xffffffffu), nullptr);
    EXPECT_EQ(t.find_struct("NO_SUCH_STRUCT"), nullptr);
    EXPECT_EQ(t.find_struct(std::string_view()), nullptr);  // a null, empty view
  }
}

TEST(RmTables, ChoosesTheBranchOfTheDriverOrTheNearest) {
  auto branches = all_branches();
  for (const Tables& t : branches) {
    std::string v(t.info().version);
    BranchChoice c = choose_branch(v);
    EXPECT_EQ(c.tables, &t) << v;
    EXPECT_TRUE(c.exact_major);
    EXPECT_EQ(find_branch(v), &t);
    EXPECT_EQ(find_branch(t.info().id), &t);
    // A /proc/driver/nvidia/version line with a later patch release of the same branch.
    std::string line = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  " +
                       std::to_string(t.major()) + ".999.99  Release Build  (dvs-builder@U16)";
    EXPECT_EQ(choose_branch(line).tables, &t) << line;
  }
  // No version at all: the newest branch.
  EXPECT_EQ(choose_branch("").tables, &branches.back());
  EXPECT_EQ(choose_branch("no digits here").tables, &branches.back());
  EXPECT_FALSE(choose_branch("").exact_major);
  // Far below / above every branch: the oldest / newest, not exact.
  EXPECT_EQ(choose_branch("100.1").tables, &branches.front());
  EXPECT_EQ(choose_branch("9999.1").tables, &branches.back());
  EXPECT_FALSE(choose_branch("9999.1").exact_major);
  // Between two branches: the nearer one; on a tie, the newer.
  const Tables& a = branches[branches.size() - 2];
  const Tables& b = branches.back();
  EXPECT_EQ(choose_branch(std::to_string(a.major() + 1) + ".0").tables, &a);
  EXPECT_EQ(choose_branch(std::to_string(b.major() - 1) + ".0").tables, &b);
  if ((b.major() - a.major()) % 2 == 0) {
    EXPECT_EQ(choose_branch(std::to_string((a.major() + b.major()) / 2) + ".0").tables, &b);
  }
  EXPECT_EQ(find_branch("r1"), nullptr);
}

// --- synthetic events --------------------------------------------------------------------------

using namespace synth;  // tables(), put(), size_of(), escape_nr(), rm_request(), ioctl()

const Field* field(const std::vector<Field>& fields, std::string_view name) {
  for (const Field& f : fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const CtrlEntry* control_named(std::string_view name) {
  for (const CtrlEntry& c : tables().controls()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

const StatusEntry* status_named(std::string_view name) {
  for (const StatusEntry& s : tables().statuses()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

TEST(RmDecode, ControlWithParameters) {
  const CtrlEntry* cmd = control_named("NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2");
  ASSERT_NE(cmd, nullptr);
  const StatusEntry* bad = status_named("NV_ERR_INVALID_ARGUMENT");
  ASSERT_NE(bad, nullptr);
  std::vector<uint8_t> arg(size_of("NVOS54_PARAMETERS"));
  put(arg, "NVOS54_PARAMETERS", "hClient", 0xc1d00001);
  put(arg, "NVOS54_PARAMETERS", "hObject", 0x5c000002);
  put(arg, "NVOS54_PARAMETERS", "cmd", cmd->id);
  put(arg, "NVOS54_PARAMETERS", "paramsSize", cmd->params_size);
  put(arg, "NVOS54_PARAMETERS", "status", bad->value);
  trace::Event ev = ioctl("/dev/nvidiactl", rm_request("NV_ESC_RM_CONTROL", arg.size()), arg);
  std::vector<uint8_t> params(cmd->params_size);
  put(params, cmd->params, "numClasses", 2);
  const StructEntry* ps = tables().find_struct(cmd->params);
  const FieldEntry* list = tables().find_field(*ps, "classList");
  ASSERT_NE(list, nullptr);
  const ClassEntry* a = tables().find_class(0x80);    // NV01_DEVICE_0 (from the table)
  const ClassEntry* b = tables().find_class(0x2080);  // NV20_SUBDEVICE_0
  ASSERT_TRUE(a && b);
  store_le<uint32_t>(params.data() + list->offset, a->id);
  store_le<uint32_t>(params.data() + list->offset + 4, b->id);
  store_le<uint32_t>(params.data() + list->offset + 8, 0xabcd0123);  // past numClasses
  trace::Buffer p;
  p.role = "params";
  p.after = params;
  ev.nested.push_back(p);

  Decoded d = decode_event(tables(), ev);
  EXPECT_TRUE(d.known);
  EXPECT_EQ(d.call, "NV_ESC_RM_CONTROL");
  EXPECT_EQ(d.device, Device::kControl);
  EXPECT_TRUE(d.notes.empty()) << d.notes.front();
  EXPECT_EQ(d.h_client, 0xc1d00001u);
  EXPECT_EQ(d.h_object, 0x5c000002u);
  EXPECT_EQ(d.cmd, cmd->id);
  EXPECT_EQ(d.status, bad->value);
  EXPECT_EQ(d.status_name, "NV_ERR_INVALID_ARGUMENT");
  EXPECT_EQ(d.params_struct, cmd->params);
  const Field* cl = field(d.params, "classList");
  ASSERT_NE(cl, nullptr);
  ASSERT_EQ(cl->items.size(), 2u);  // bounded by numClasses
  EXPECT_EQ(cl->items[0].symbol, a->name);
  EXPECT_EQ(cl->items[1].symbol, b->name);
  std::string line = format_line(d);
  EXPECT_NE(line.find("cmd=NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2"), std::string::npos) << line;
  EXPECT_NE(line.find("status=NV_ERR_INVALID_ARGUMENT"), std::string::npos) << line;
  EXPECT_NE(line.find("hClient=0xc1d00001"), std::string::npos) << line;
  std::string json;
  JsonWriter w(json, false);
  write_json(w, d);
  auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["call"], "NV_ESC_RM_CONTROL");
  EXPECT_EQ(j["status_name"], "NV_ERR_INVALID_ARGUMENT");
  EXPECT_EQ(j["h_client"], "0xc1d00001");
  EXPECT_EQ(j["params_struct"], std::string(cmd->params));
}

TEST(RmDecode, UnknownValuesPrintAsHexWithQuestionMark) {
  std::vector<uint8_t> arg(size_of("NVOS54_PARAMETERS"));
  uint32_t cmd = 0x2080ff7f;  // no interface 0x2080ff in any release
  ASSERT_EQ(tables().find_control(cmd), nullptr);
  ASSERT_EQ(tables().find_category(cmd), nullptr);
  put(arg, "NVOS54_PARAMETERS", "cmd", cmd);
  put(arg, "NVOS54_PARAMETERS", "status", 0x7ffffff1);
  ASSERT_EQ(tables().find_status(0x7ffffff1), nullptr);
  Decoded d = decode_event(
      tables(), ioctl("/dev/nvidiactl", rm_request("NV_ESC_RM_CONTROL", arg.size()), arg));
  std::string line = format_line(d);
  EXPECT_NE(line.find("cmd=0x2080ff7f?"), std::string::npos) << line;
  EXPECT_NE(line.find("status=0x7ffffff1?"), std::string::npos) << line;
  EXPECT_TRUE(d.status_name.empty());
  // A command known only by its interface names the interface.
  uint32_t gpu_cmd = 0;
  for (const CategoryEntry& c : tables().categories()) {
    uint32_t candidate = (c.id << 8) | 0xfe;
    if (tables().find_control(candidate) == nullptr) {
      gpu_cmd = candidate;
      put(arg, "NVOS54_PARAMETERS", "cmd", candidate);
      d = decode_event(tables(),
                       ioctl("/dev/nvidiactl", rm_request("NV_ESC_RM_CONTROL", arg.size()), arg));
      EXPECT_NE(format_line(d).find("? (" + std::string(c.name) + ")"), std::string::npos)
          << format_line(d);
      break;
    }
  }
  EXPECT_NE(gpu_cmd, 0u);
}

TEST(RmDecode, AllocPicksTheStructureBySize) {
  const ClassEntry* cls = tables().find_class(0x80);
  ASSERT_NE(cls, nullptr);
  for (std::string_view type : {"NVOS21_PARAMETERS", "NVOS64_PARAMETERS"}) {
    std::vector<uint8_t> arg(size_of(type));
    put(arg, type, "hRoot", 0xc1d00001);
    put(arg, type, "hObjectParent", 0xc1d00001);
    put(arg, type, "hObjectNew", 0x5c000002);
    put(arg, type, "hClass", cls->id);
    Decoded d = decode_event(
        tables(), ioctl("/dev/nvidiactl", rm_request("NV_ESC_RM_ALLOC", arg.size()), arg));
    EXPECT_EQ(d.arg_struct, type);
    EXPECT_TRUE(d.notes.empty()) << d.notes.front();
    EXPECT_EQ(d.h_client, 0xc1d00001u);
    EXPECT_EQ(d.h_parent, 0xc1d00001u);
    EXPECT_EQ(d.h_object, 0x5c000002u);
    EXPECT_EQ(d.h_class, cls->id);
    EXPECT_EQ(d.params_struct, cls->alloc_params);
    EXPECT_NE(format_line(d).find("hClass=" + std::string(cls->name)), std::string::npos);
  }
}

TEST(RmDecode, ShortAndMismatchedArguments) {
  std::vector<uint8_t> arg(size_of("NVOS54_PARAMETERS"));
  // The request says 32 bytes but only 6 were recorded: the members that fit, one partial line.
  trace::Event ev = ioctl("/dev/nvidiactl", rm_request("NV_ESC_RM_CONTROL", arg.size()),
                          std::vector<uint8_t>(arg.begin(), arg.begin() + 6));
  Decoded d = decode_event(tables(), ev);
  EXPECT_TRUE(d.known);
  EXPECT_TRUE(d.notes.empty());
  ASSERT_EQ(d.partial.size(), 1u);
  EXPECT_NE(d.partial[0].find("NVOS54_PARAMETERS"), std::string::npos) << d.partial[0];
  EXPECT_NE(field(d.args, "hClient"), nullptr);
  EXPECT_EQ(field(d.args, "status"), nullptr);
  // A request size that is not the branch's structure size is an anomaly.
  d = decode_event(tables(), ioctl("/dev/nvidiactl", rm_request("NV_ESC_RM_CONTROL", 24), arg));
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_NE(d.notes[0].find("request size 24"), std::string::npos) << d.notes[0];
  // No argument recorded at all.
  ev.arg.reset();
  d = decode_event(tables(), ev);
  EXPECT_EQ(d.partial.size(), 2u);
  EXPECT_TRUE(d.args.empty());
}

TEST(RmDecode, UnknownRequestsFallBackToAHexDumpSizedByTheRequest) {
  std::vector<uint8_t> arg(64, 0xab);
  uint64_t req = (3ULL << 30) | (16ULL << 16) | ('F' << 8) | 0x99;  // no escape 0x99
  ASSERT_EQ(tables().find_escape(0x99), nullptr);
  Decoded d = decode_event(tables(), ioctl("/dev/nvidia0", req, arg));
  EXPECT_FALSE(d.known);
  EXPECT_TRUE(d.call.empty());
  std::string sixteen;  // _IOC_SIZE 16 of the 64 recorded bytes
  for (int i = 0; i < 16; ++i) sixteen += "ab";
  EXPECT_EQ(d.hex, sixteen);
  EXPECT_EQ(format_line(d).rfind("ioctl 0x", 0), 0u) << format_line(d);
  // Another driver's request on an NVIDIA node, and an unknown UVM number.
  d = decode_event(tables(), ioctl("/dev/nvidia-modeset", 0xc0106d00, arg));
  EXPECT_FALSE(d.known);
  EXPECT_EQ(d.hex.size(), 32u);
  ASSERT_EQ(tables().find_uvm(0x7777), nullptr);
  d = decode_event(tables(), ioctl("/dev/nvidia-uvm", 0x7777, std::vector<uint8_t>(1000, 1)));
  EXPECT_FALSE(d.known);
  EXPECT_EQ(d.hex.size(), 2 * kMaxHexBytes);
  EXPECT_EQ(d.partial.size(), 1u);
}

TEST(RmDecode, UvmCallWithStatus) {
  const UvmEntry* u = nullptr;
  for (const UvmEntry& e : tables().uvm_ioctls()) {
    if (e.name == "UVM_FREE") u = &e;
  }
  ASSERT_NE(u, nullptr);
  const StatusEntry* st = status_named("NV_ERR_INVALID_ADDRESS");
  ASSERT_NE(st, nullptr);
  std::vector<uint8_t> arg(256);  // recorders read more than the structure
  put(arg, u->params, "base", 0x200000000);
  put(arg, u->params, "length", 0x200000);
  put(arg, u->params, "rmStatus", st->value);
  Decoded d = decode_event(tables(), ioctl("/dev/nvidia-uvm", u->nr, arg));
  EXPECT_TRUE(d.known);
  EXPECT_EQ(d.call, "UVM_FREE");
  EXPECT_EQ(d.device, Device::kUvm);
  EXPECT_EQ(d.status_name, "NV_ERR_INVALID_ADDRESS");
  EXPECT_TRUE(d.notes.empty());
  EXPECT_TRUE(d.partial.empty());
  EXPECT_NE(format_line(d).find("base=0x200000000 length=2097152"), std::string::npos)
      << format_line(d);
}

TEST(RmDecode, CardInfoKeepsValidSlots) {
  uint32_t one = static_cast<uint32_t>(size_of("nv_ioctl_card_info_t"));
  ASSERT_GT(one, 0u);
  std::vector<uint8_t> arg(one * 4);
  std::vector<uint8_t> card(one);
  put(card, "nv_ioctl_card_info_t", "valid", 1);
  put(card, "nv_ioctl_card_info_t", "gpu_id", 0x1800);
  std::copy(card.begin(), card.end(), arg.begin() + 2 * one);  // slot 2 of 4
  Decoded d = decode_event(
      tables(), ioctl("/dev/nvidiactl", rm_request("NV_ESC_CARD_INFO", arg.size()), arg));
  EXPECT_TRUE(d.notes.empty());
  const Field* entries = field(d.args, "entries");
  ASSERT_NE(entries, nullptr);
  ASSERT_EQ(entries->items.size(), 1u);
  const Field* gpu = field(entries->items[0].items, "gpu_id");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->value, 0x1800u);
  // Not a multiple of the entry size.
  arg.resize(arg.size() - 1);
  d = decode_event(tables(),
                   ioctl("/dev/nvidiactl", rm_request("NV_ESC_CARD_INFO", arg.size()), arg));
  EXPECT_EQ(d.notes.size(), 1u);
}

TEST(RmDecode, VersionCheckString) {
  std::vector<uint8_t> arg(size_of("nv_ioctl_rm_api_version_t"));
  put(arg, "nv_ioctl_rm_api_version_t", "cmd", '2');
  const StructEntry* s = tables().find_struct("nv_ioctl_rm_api_version_t");
  const FieldEntry* vs = tables().find_field(*s, "versionString");
  ASSERT_NE(vs, nullptr);
  std::string v = "580.159.04";
  std::copy(v.begin(), v.end(), arg.begin() + vs->offset);
  Decoded d = decode_event(
      tables(), ioctl("/dev/nvidiactl", rm_request("NV_ESC_CHECK_VERSION_STR", arg.size()), arg));
  EXPECT_NE(format_line(d).find("cmd='2'"), std::string::npos) << format_line(d);
  EXPECT_NE(format_line(d).find("versionString=\"580.159.04\""), std::string::npos);
}

TEST(RmDecode, XferNamesTheEscapeItCarries) {
  std::vector<uint8_t> arg(size_of("nv_ioctl_xfer_t"));
  put(arg, "nv_ioctl_xfer_t", "cmd", escape_nr("NV_ESC_RM_CONTROL"));
  put(arg, "nv_ioctl_xfer_t", "size", size_of("NVOS54_PARAMETERS"));
  trace::Event ev = ioctl("/dev/nvidiactl", rm_request("NV_ESC_IOCTL_XFER_CMD", arg.size()), arg);
  std::vector<uint8_t> inner(size_of("NVOS54_PARAMETERS"));
  put(inner, "NVOS54_PARAMETERS", "hClient", 0xc1d0beef);
  trace::Buffer x;
  x.role = "xfer";
  x.after = inner;
  ev.nested.push_back(x);
  Decoded d = decode_event(tables(), ev);
  EXPECT_TRUE(d.notes.empty());
  EXPECT_EQ(d.params_struct, "NVOS54_PARAMETERS");
  const Field* h = field(d.params, "hClient");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->value, 0xc1d0beefu);
  // An XFER naming no known escape is an anomaly, not a crash.
  put(arg, "nv_ioctl_xfer_t", "cmd", 0x99);
  d = decode_event(tables(),
                   ioctl("/dev/nvidiactl", rm_request("NV_ESC_IOCTL_XFER_CMD", arg.size()), arg));
  EXPECT_EQ(d.notes.size(), 1u);
}

TEST(RmDecode, HostileCountsAreBounded) {
  const CtrlEntry* cmd = control_named("NV2080_CTRL_CMD_GPU_GET_INFO_V2");
  ASSERT_NE(cmd, nullptr);
  std::vector<uint8_t> arg(size_of("NVOS54_PARAMETERS"));
  put(arg, "NVOS54_PARAMETERS", "cmd", cmd->id);
  put(arg, "NVOS54_PARAMETERS", "paramsSize", cmd->params_size);
  trace::Event ev = ioctl("/dev/nvidiactl", rm_request("NV_ESC_RM_CONTROL", arg.size()), arg);
  std::vector<uint8_t> params(cmd->params_size);
  put(params, cmd->params, "gpuInfoListSize", 0xffffffff);
  trace::Buffer p;
  p.role = "params";
  p.after = params;
  ev.nested.push_back(p);
  Decoded d = decode_event(tables(), ev);
  const Field* list = field(d.params, "gpuInfoList");
  ASSERT_NE(list, nullptr);
  const FieldEntry* fe = tables().find_field(*tables().find_struct(cmd->params), "gpuInfoList");
  EXPECT_EQ(list->total, fe->size / fe->elem_size);  // capped by the array's capacity
  EXPECT_LE(list->items.size(), kMaxListItems);
}

TEST(RmDecode, OtherSyscalls) {
  trace::Event ev;
  ev.sys = trace::Sys::kMmap;
  ev.path = "/dev/nvidia0";
  ev.len = 65536;
  ev.offset = 0x1000;
  ev.ret = 0x7f0000000000;
  Decoded d = decode_event(tables(), ev);
  EXPECT_EQ(d.call, "mmap");
  EXPECT_EQ(d.device, Device::kGpu);
  EXPECT_NE(format_line(d).find("len=65536 prot=0x0 flags=0x0 offset=0x1000"), std::string::npos)
      << format_line(d);
  EXPECT_EQ(classify_device("/dev/nvidia-uvm-tools"), Device::kUvmTools);
  EXPECT_EQ(classify_device("/dev/nvidia-caps/nvidia-cap1"), Device::kCaps);
  EXPECT_EQ(classify_device("/dev/nvidia-nvswitchctl"), Device::kOtherNvidia);
  EXPECT_EQ(classify_device("/dev/null"), Device::kUnknown);
  // By the last component, as the recorders decide (--devices may select nodes elsewhere).
  EXPECT_EQ(classify_device("/tmp/fake/nvidiactl"), Device::kControl);
  EXPECT_EQ(classify_device("/tmp/fake/nvidia-uvm"), Device::kUvm);
  EXPECT_EQ(classify_device("/tmp/fake/nvidia7"), Device::kGpu);
  EXPECT_EQ(classify_device("/dev/nvidia-caps-imex-channels/channel0"), Device::kCaps);
  EXPECT_EQ(classify_device("/tmp/nvidia/other"), Device::kUnknown);
  EXPECT_EQ(classify_device(""), Device::kUnknown);
  // The caps check: a name in /dev, or anything under a /nvidia-caps… directory elsewhere.
  EXPECT_EQ(classify_device("/dev/nvidia-caps"), Device::kCaps);
  EXPECT_EQ(classify_device("/tmp/x/nvidia-caps/nvidiactl"), Device::kCaps);
  EXPECT_EQ(classify_device("/dev/x/nvidia-caps"), Device::kCaps);
  EXPECT_EQ(classify_device("/devx/nvidiactl"), Device::kControl);
}

}  // namespace
}  // namespace cudatool::rm
