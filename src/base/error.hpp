// Errors and results shared by every parser.
//
// A parser never prints and never exits: it returns Result<T> (a value or an Error) and reports
// damage it can step over to a Diagnostics sink. The caller (cli/) decides what is fatal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace cudatool {

// What went wrong and where. `structure` names the record including its index
// ("section [5] .rodata", "FDE #12"), `field` the member ("sh_offset"), `offset` the file
// offset of the structure or field when it is known, `reason` says what is wrong with it.
struct Error {
  std::string structure;
  std::string field;
  std::optional<uint64_t> offset;
  std::string reason;

  // "section [5] .rodata: sh_offset: 0x… + 0x… exceeds file size 0x… (at file offset 0x…)"
  [[nodiscard]] std::string message() const;
};

[[nodiscard]] Error make_error(std::string structure, std::string field,
                               std::optional<uint64_t> offset, std::string reason);

// A value or an Error. Modeled on llvm::Expected, without its must-check machinery.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }

  [[nodiscard]] const Error& error() const { return std::get<1>(v_); }
  Error take_error() && { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

// Success or an Error, for operations that produce no value.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  static Status success() { return {}; }

  [[nodiscard]] bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  [[nodiscard]] const Error& error() const { return *error_; }

 private:
  std::optional<Error> error_;
};

// Collects non-fatal problems (a damaged record that the parser stepped over). Bounded: a
// hostile file with a million bad records keeps the first kMaxKept and counts the rest.
class Diagnostics {
 public:
  static constexpr size_t kMaxKept = 1000;

  void report(Error e);
  // What `other` collected, placed as if it had been reported when items().size() was `at`
  // (work done on another thread keeps the order it would have had done in turn).
  void insert(size_t at, const Diagnostics& other);
  [[nodiscard]] const std::vector<Error>& items() const { return items_; }
  [[nodiscard]] uint64_t count() const { return count_; }
  [[nodiscard]] bool empty() const { return count_ == 0; }
  void clear() {
    items_.clear();
    count_ = 0;
  }

 private:
  std::vector<Error> items_;
  uint64_t count_ = 0;
};

}  // namespace cudatool
