#include "base/mapped_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/errno_error.hpp"

namespace cudatool {

MappedFile::MappedFile(MappedFile&& other) noexcept {
  *this = std::move(other);
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this == &other) return *this;
  reset();
  mapped_ = other.mapped_;
  owned_ = std::move(other.owned_);
  path_ = std::move(other.path_);
  size_ = other.size_;
  data_ = mapped_ ? other.data_ : owned_.data();
  other.data_ = nullptr;
  other.size_ = 0;
  other.mapped_ = false;
  return *this;
}

MappedFile::~MappedFile() {
  reset();
}

void MappedFile::reset() {
  if (mapped_ && data_ != nullptr) munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
  mapped_ = false;
  owned_.clear();
}

Result<MappedFile> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_error(path, "cannot open", errno);
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return errno_error(path, "cannot stat", e);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return make_error(path, "", std::nullopt, "is a directory, not a file");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error(path, "", std::nullopt, "is not a regular file");
  }
  MappedFile f;
  f.path_ = path;
  if (st.st_size > 0) {
    void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      return errno_error(path, "cannot map", e);
    }
    f.data_ = static_cast<const uint8_t*>(p);
    f.size_ = static_cast<uint64_t>(st.st_size);
    f.mapped_ = true;
  }
  ::close(fd);
  return f;
}

MappedFile MappedFile::from_buffer(std::vector<uint8_t> bytes, std::string name) {
  MappedFile f;
  f.owned_ = std::move(bytes);
  f.data_ = f.owned_.data();
  f.size_ = f.owned_.size();
  f.path_ = std::move(name);
  return f;
}

}  // namespace cudatool
