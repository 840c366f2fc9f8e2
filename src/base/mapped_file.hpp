// A read-only file image: memory-mapped from disk (nothing is read until it is touched), or
// owned bytes (a member extracted from a .deb, a fuzzer input).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "base/error.hpp"

namespace cudatool {

class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  // Maps `path` read-only. Errors name the path and the failing system call.
  static Result<MappedFile> open(const std::string& path);
  // Takes ownership of bytes that did not come from a file of their own.
  static MappedFile from_buffer(std::vector<uint8_t> bytes, std::string name);

  [[nodiscard]] ByteView bytes() const { return {data_, size_, 0}; }
  [[nodiscard]] uint64_t size() const { return size_; }
  // The path given to open(), or the name given to from_buffer().
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  void reset();

  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  bool mapped_ = false;
  std::vector<uint8_t> owned_;
  std::string path_;
};

}  // namespace cudatool
