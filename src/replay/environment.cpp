#include "replay/environment.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fmt/format.h>
#include <cerrno>
#include <cstring>

#include "base/bytes.hpp"
#include "rm/nv_ioctl_abi.h"
#include "trace/decode.hpp"

namespace cudatool::replay {
namespace {

Error io_error(const std::string& path, const char* what) {
  return make_error(path, "", std::nullopt, fmt::format("{}: {}", what, std::strerror(errno)));
}

Status make_dirs(const std::string& dir) {
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i < dir.size() && dir[i] != '/') continue;
    std::string p = dir.substr(0, i);
    if (mkdir(p.c_str(), 0755) != 0 && errno != EEXIST) return io_error(p, "mkdir");
  }
  return Status::success();
}

Status write_file(const std::string& path, const void* data, size_t n) {
  if (Status s = make_dirs(path.substr(0, path.rfind('/'))); !s.ok()) return s;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error(path, "create");
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w <= 0) {
      ::close(fd);
      return io_error(path, "write");
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  ::close(fd);
  return Status::success();
}

// The documented device numbers of the nodes the NVIDIA driver creates (nvidia-modprobe:
// nvidiactl 195:255, nvidiaN 195:N, nvidia-modeset 195:254; nvidia-uvm has a dynamic major, this
// replay gives it 510).
uint64_t default_rdev(const std::string& path) {
  std::string base = path.substr(path.rfind('/') + 1);
  if (base == "nvidiactl") return makedev(195, 255);
  if (base == "nvidia-modeset") return makedev(195, 254);
  if (base == "nvidia-uvm") return makedev(510, 0);
  if (base == "nvidia-uvm-tools") return makedev(510, 1);
  if (base.size() > 6 && base.compare(0, 6, "nvidia") == 0) {
    unsigned n = 0;
    bool digits = true;
    for (size_t i = 6; i < base.size(); ++i) {
      if (base[i] < '0' || base[i] > '9') digits = false;
      n = n * 10 + static_cast<unsigned>(base[i] - '0');
    }
    if (digits && n < 255) return makedev(195, n);
  }
  return makedev(195, 0);
}

struct CardInfo {
  bool found = false;
  uint32_t domain = 0;
  uint8_t bus = 1, slot = 0, function = 0;
  uint16_t vendor = 0x10de, device = 0;
  uint64_t reg_address = 0, reg_size = 0, fb_address = 0, fb_size = 0;
  uint8_t irq = 0;
  uint32_t minor = 0;
};

// The first valid GPU of the first NV_ESC_CARD_INFO answer of the recording.
CardInfo card_info(const Recording& rec) {
  CardInfo c;
  const rm::Tables& t = *rec.tables;
  const rm::StructEntry* s = t.find_struct("nv_ioctl_card_info_t");
  const rm::StructEntry* pci = t.find_struct("nv_pci_info_t");
  if (s == nullptr || pci == nullptr || s->size <= 0) return c;
  auto off = [&](const rm::StructEntry* st, std::string_view m) -> int64_t {
    const rm::FieldEntry* f = t.find_field(*st, m);
    return f ? static_cast<int64_t>(f->offset) : -1;
  };
  int64_t pci_off = off(s, "pci_info");
  for (const trace::Event& ev : rec.events) {
    if (ev.sys != trace::Sys::kIoctl || !ev.arg || ev.arg->after.empty()) continue;
    if (NVTR_IOC_TYPE(ev.request) != NVTR_NV_IOCTL_MAGIC ||
        NVTR_IOC_NR(ev.request) != NVTR_ESC_CARD_INFO) {
      continue;
    }
    ByteView v(ev.arg->after.data(), ev.arg->after.size());
    uint64_t size = static_cast<uint64_t>(s->size);
    for (uint64_t base = 0; base + size <= v.size(); base += size) {
      if (v.read<uint8_t>(base + off(s, "valid")).value_or(0) == 0 || pci_off < 0) continue;
      uint64_t p = base + static_cast<uint64_t>(pci_off);
      c.found = true;
      c.domain = v.read<uint32_t>(p + off(pci, "domain")).value_or(0);
      c.bus = v.read<uint8_t>(p + off(pci, "bus")).value_or(0);
      c.slot = v.read<uint8_t>(p + off(pci, "slot")).value_or(0);
      c.function = v.read<uint8_t>(p + off(pci, "function")).value_or(0);
      c.vendor = v.read<uint16_t>(p + off(pci, "vendor_id")).value_or(0x10de);
      c.device = v.read<uint16_t>(p + off(pci, "device_id")).value_or(0);
      c.reg_address = v.read<uint64_t>(base + off(s, "reg_address")).value_or(0);
      c.reg_size = v.read<uint64_t>(base + off(s, "reg_size")).value_or(0);
      c.fb_address = v.read<uint64_t>(base + off(s, "fb_address")).value_or(0);
      c.fb_size = v.read<uint64_t>(base + off(s, "fb_size")).value_or(0);
      c.irq = static_cast<uint8_t>(v.read<uint16_t>(base + off(s, "interrupt_line")).value_or(0));
      c.minor = v.read<uint32_t>(base + off(s, "minor_number")).value_or(0);
      return c;
    }
  }
  return c;
}

std::string gpu_name(const Recording& rec) {
  return rec.norm && !rec.norm->gpu.name.empty() ? rec.norm->gpu.name : "NVIDIA GPU";
}

// /proc/driver/nvidia/params of a default installation (nv-reg.h's options with their defaults,
// as a 580 driver lists them).
constexpr const char* kParams =
    "ResmanDebugLevel: 4294967295\n"
    "RmLogonRC: 1\n"
    "ModifyDeviceFiles: 1\n"
    "DeviceFileUID: 0\n"
    "DeviceFileGID: 0\n"
    "DeviceFileMode: 438\n"
    "InitializeSystemMemoryAllocations: 1\n"
    "UsePageAttributeTable: 4294967295\n"
    "EnableMSI: 1\n"
    "EnablePCIeGen3: 0\n"
    "MemoryPoolSize: 0\n"
    "KMallocHeapMaxSize: 0\n"
    "VMallocHeapMaxSize: 0\n"
    "IgnoreMMIOCheck: 0\n"
    "EnableStreamMemOPs: 0\n"
    "EnableUserNUMAManagement: 1\n"
    "NvLinkDisable: 0\n"
    "RmProfilingAdminOnly: 1\n"
    "PreserveVideoMemoryAllocations: 0\n"
    "EnableS0ixPowerManagement: 0\n"
    "S0ixPowerManagementVideoMemoryThreshold: 256\n"
    "DynamicPowerManagement: 3\n"
    "DynamicPowerManagementVideoMemoryThreshold: 200\n"
    "RegisterPCIDriver: 1\n"
    "EnablePCIERelaxedOrderingMode: 0\n"
    "EnableResizableBar: 0\n"
    "EnableGpuFirmware: 18\n"
    "EnableGpuFirmwareLogs: 2\n"
    "RmNvlinkBandwidthLinkCount: 0\n"
    "EnableDbgBreakpoint: 0\n"
    "OpenRmEnableUnsupportedGpus: 1\n"
    "DmaRemapPeerMmio: 1\n"
    "ImexChannelCount: 2048\n"
    "CreateImexChannel0: 0\n"
    "GrdmaPciTopoCheckOverride: 0\n"
    "RegistryDwords: \"\"\n"
    "RegistryDwordsPerDevice: \"\"\n"
    "RmMsg: \"\"\n"
    "GpuBlacklist: \"\"\n"
    "TemporaryFilePath: \"\"\n"
    "ExcludedGpus: \"\"\n";

Status build_defaults(const Recording& rec, Environment& env) {
  CardInfo c = card_info(rec);
  if (c.device == 0 && env.gpu_pci_id != 0) c.device = static_cast<uint16_t>(env.gpu_pci_id);
  env.gpu_bdf = fmt::format("{:04x}:{:02x}:{:02x}.{:x}", c.domain, c.bus, c.slot, c.function);
  env.gpu_pci_id = (uint32_t{c.vendor} << 16) | c.device;
  std::string ver = rec.header.driver_version.value_or("");
  std::string line = rec.header.driver_version_line;
  if (line.empty()) {
    line = fmt::format(
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {}  Release Build  "
        "(cudatool replay)",
        ver);
  }
  auto put = [&](const std::string& path, std::string_view text) -> Status {
    env.files.push_back(path);
    return write_file(env.root + path, text.data(), text.size());
  };
  std::vector<std::pair<std::string, std::string>> files = {
      {"/proc/driver/nvidia/version", line + "\nGCC version:  (cudatool replay)\n"},
      {"/proc/driver/nvidia/params", kParams},
      {"/proc/driver/nvidia/registry", "Binary: \"\"\n"},
      {"/proc/driver/nvidia/gpus/" + env.gpu_bdf + "/information",
       fmt::format("Model: \t\t {}\nIRQ:   \t\t {}\nGPU UUID: \t GPU-00000000-0000-0000-0000-"
                   "000000000000\nVideo BIOS: \t ??.??.??.??.??\nBus Type: \t PCIe\nDMA Size: "
                   "\t 52 bits\nDMA Mask: \t 0xfffffffffffff\nBus Location: \t {}\nDevice Minor: "
                   "\t {}\nGPU Excluded:\t No\n",
                   gpu_name(rec), c.irq, env.gpu_bdf, c.minor)},
      {"/sys/module/nvidia/initstate", "live\n"},
      {"/sys/module/nvidia/version", ver + "\n"},
      {"/sys/module/nvidia_uvm/initstate", "live\n"},
  };
  std::string dev = "/sys/bus/pci/devices/" + env.gpu_bdf + "/";
  files.push_back({dev + "vendor", fmt::format("0x{:04x}\n", c.vendor)});
  files.push_back({dev + "device", fmt::format("0x{:04x}\n", c.device)});
  files.push_back({dev + "class", "0x030200\n"});
  files.push_back({dev + "revision", "0xa1\n"});
  files.push_back({dev + "subsystem_vendor", fmt::format("0x{:04x}\n", c.vendor)});
  files.push_back({dev + "subsystem_device", "0x0000\n"});
  files.push_back({dev + "numa_node", "-1\n"});
  files.push_back({dev + "irq", fmt::format("{}\n", c.irq)});
  files.push_back({dev + "enable", "1\n"});
  files.push_back({dev + "local_cpulist", "0\n"});
  files.push_back({dev + "driver_override", "(null)\n"});
  std::string resource;
  auto res = [&](uint64_t start, uint64_t size, uint64_t flags) {
    resource +=
        size == 0 ? fmt::format("0x{:016x} 0x{:016x} 0x{:016x}\n", 0, 0, 0)
                  : fmt::format("0x{:016x} 0x{:016x} 0x{:016x}\n", start, start + size - 1, flags);
  };
  res(c.reg_address, c.reg_size, 0x40200);  // BAR0: 32-bit memory
  res(c.fb_address, c.fb_size, 0x14220c);   // BAR1: 64-bit prefetchable memory
  res(0, 0, 0);
  res(0, 0, 0);  // BAR3 (not in the recording)
  for (int i = 0; i < 9; ++i) res(0, 0, 0);
  files.push_back({dev + "resource", resource});
  for (const auto& [p, text] : files) {
    if (Status s = put(p, text); !s.ok()) return s;
  }
  std::vector<uint8_t> cfg =
      default_config_space(env.gpu_pci_id, c.reg_address, c.fb_address, c.irq);
  env.files.push_back(dev + "config");
  return write_file(env.root + dev + "config", cfg.data(), cfg.size());
}

// The recorded environment (v2 traces): files with their contents, directories, device nodes.
Status build_recorded(const Recording& rec, Environment& env) {
  for (const trace::Event& ev : rec.events) {
    if (ev.path.empty() || ev.path[0] != '/') continue;
    // The directory of every path a call succeeded on exists (so that a file the program creates
    // there is created in the private tree); not for failed calls: a missing /proc/driver/nvidia
    // stays missing. Best effort: a name the trace also gives a file stays one.
    if (trace::is_environment(ev.sys) && ev.ret >= 0) {
      size_t slash = ev.path.rfind('/');
      if (slash > 0) (void)make_dirs(env.root + ev.path.substr(0, slash));
    }
    if (ev.sys == trace::Sys::kFile && ev.ret >= 0) {
      std::string dst = env.root + ev.path;
      if (ev.has_entries) {
        if (Status s = make_dirs(dst); !s.ok()) return s;
        for (const std::string& name : ev.entries) {
          if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
            continue;
          }
          std::string child = dst + "/" + name;
          struct stat st {};
          if (::stat(child.c_str(), &st) != 0 && ::mkdir(child.c_str(), 0755) != 0) {
            return io_error(child, "mkdir");
          }
        }
      } else if (ev.content) {
        const std::vector<uint8_t>& b = ev.content->after;
        if (Status s = write_file(dst, b.data(), b.size()); !s.ok()) return s;
        env.files.push_back(ev.path);
      }
      env.recorded = true;
    } else if (ev.sys == trace::Sys::kStat && ev.has_stat && S_ISCHR(ev.mode)) {
      bool known = false;
      for (DeviceNode& d : env.devices) {
        if (d.path == ev.path) {
          d.mode = static_cast<uint32_t>(ev.mode);
          d.rdev = ev.rdev;
          known = true;
        }
      }
      if (!known) env.devices.push_back({ev.path, static_cast<uint32_t>(ev.mode), ev.rdev});
      env.recorded = true;
    }
  }
  return Status::success();
}

}  // namespace

std::vector<uint8_t> default_config_space(uint32_t pci_id, uint64_t bar0, uint64_t bar1,
                                          uint8_t irq) {
  std::vector<uint8_t> c(256, 0);
  auto w16 = [&](size_t o, uint16_t v) { store_le<uint16_t>(c.data() + o, v); };
  auto w32 = [&](size_t o, uint32_t v) { store_le<uint32_t>(c.data() + o, v); };
  w16(0x00, static_cast<uint16_t>(pci_id >> 16));               // vendor
  w16(0x02, static_cast<uint16_t>(pci_id));                     // device
  w16(0x04, 0x0006);                                            // command: memory space, bus master
  w16(0x06, 0x0010);                                            // status: capabilities list
  c[0x08] = 0xa1;                                               // revision
  c[0x0a] = 0x02;                                               // subclass: 3D controller
  c[0x0b] = 0x03;                                               // class: display controller
  w32(0x10, static_cast<uint32_t>(bar0 & 0xfffffff0u));         // BAR0: 32-bit memory
  w32(0x14, static_cast<uint32_t>(bar1 & 0xfffffff0u) | 0x0c);  // BAR1: 64-bit prefetch
  w32(0x18, static_cast<uint32_t>(bar1 >> 32));
  w32(0x1c, 0x0c);  // BAR3: 64-bit prefetchable (address not recorded)
  w16(0x2c, static_cast<uint16_t>(pci_id >> 16));  // subsystem vendor
  c[0x34] = 0x60;                                  // capabilities pointer
  c[0x3c] = irq;
  c[0x3d] = 0x01;  // INTA
  // Power management (PCI PM 1.2): version 3, D0.
  c[0x60] = 0x01;
  c[0x61] = 0x68;
  w16(0x62, 0x0003);
  w16(0x64, 0x0008);
  // MSI: 64-bit capable, disabled.
  c[0x68] = 0x05;
  c[0x69] = 0x78;
  w16(0x6a, 0x0080);
  // PCI Express v2, legacy endpoint; link 32 GT/s x16.
  c[0x78] = 0x10;
  c[0x79] = 0x00;
  w16(0x7a, 0x0002);
  w32(0x7c, 0x00008fe1);               // device capabilities
  w16(0x80, 0x2930);                   // device control
  w32(0x84, 0x00000105 | (16u << 4));  // link capabilities: speed 5, width 16
  w16(0x88, 0x0000);
  w16(0x8a, static_cast<uint16_t>(0x0005 | (16u << 4)));  // link status
  return c;
}

namespace {

// The recorded machine's memory block size: libcuda reads it from kMemblockPath and passes it
// on as NV_ESC_SYS_PARAMS.memblock_size, so the recording's first such call holds it. The replay
// answers the file with it (unless the environment events recorded the file itself), so that the
// replayed call asks what the recorded one asked, not what this host would say.
Status add_memblock_size(const Recording& rec, Environment& env) {
  if (rec.tables == nullptr) return {};
  for (const std::string& f : env.files) {
    if (f == kMemblockPath) return {};
  }
  const rm::EscapeEntry* esc = nullptr;
  for (const rm::EscapeEntry& e : rec.tables->escapes()) {
    if (e.name == "NV_ESC_SYS_PARAMS") esc = &e;
  }
  if (esc == nullptr) return {};
  for (const trace::Event& ev : rec.events) {
    // Only an 'F' request of that number is decoded (a trace without one is not decoded whole).
    if (ev.sys != trace::Sys::kIoctl || NVTR_IOC_TYPE(ev.request) != NVTR_NV_IOCTL_MAGIC ||
        NVTR_IOC_NR(ev.request) != esc->nr) {
      continue;
    }
    trace::Decoded d = trace::decode_event(*rec.tables, ev);
    if (d.call != "NV_ESC_SYS_PARAMS") continue;
    for (const rm::Field& f : d.args) {
      if (f.name != "memblock_size" || f.value == 0) continue;
      std::string path = env.root + kMemblockPath;
      if (Status s = make_dirs(path.substr(0, path.rfind('/'))); !s.ok()) return s;
      std::string text = fmt::format("{:x}\n", f.value);  // as the kernel prints it
      if (Status s = write_file(path, text.data(), text.size()); !s.ok()) return s;
      env.files.emplace_back(kMemblockPath);
      env.globs += std::string(",") + kMemblockPath;
      env.synthesized.push_back(fmt::format(
          "seq {} NV_ESC_SYS_PARAMS: {} answered with its memblock_size 0x{:x} (the recorded "
          "machine's memory block size)",
          ev.seq, kMemblockPath, f.value));
    }
    break;
  }
  return {};
}

}  // namespace

Result<Environment> build_environment(const Recording& rec, const std::string& root) {
  Environment env;
  env.root = root;
  env.globs = kDefaultEnvGlobs;
  if (!rec.header.env.empty()) env.globs = rec.header.env + "," + env.globs;
  if (::mkdir(root.c_str(), 0755) != 0) return io_error(root, "mkdir");
  // Every device path the recording opened is a character device node.
  for (const trace::Event& ev : rec.events) {
    if (ev.sys != trace::Sys::kOpen || ev.path.empty()) continue;
    bool known = false;
    for (const DeviceNode& d : env.devices) known = known || d.path == ev.path;
    if (!known) env.devices.push_back({ev.path, S_IFCHR | 0666, default_rdev(ev.path)});
  }
  if (rec.norm && rec.norm->gpu.pci_id) env.gpu_pci_id = *rec.norm->gpu.pci_id;
  if (Status s = build_recorded(rec, env); !s.ok()) return s.error();
  if (!env.recorded) {
    if (Status s = build_defaults(rec, env); !s.ok()) return s.error();
  }
  if (Status s = add_memblock_size(rec, env); !s.ok()) return s.error();
  return env;
}

}  // namespace cudatool::replay
