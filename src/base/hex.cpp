#include "base/hex.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace cudatool {
namespace {

struct HexTable {
  int8_t v[256];
  constexpr HexTable() : v() {
    for (int i = 0; i < 256; ++i) v[i] = -1;
    for (int i = 0; i < 10; ++i) v['0' + i] = static_cast<int8_t>(i);
    for (int i = 0; i < 6; ++i) {
      v['a' + i] = static_cast<int8_t>(10 + i);
      v['A' + i] = static_cast<int8_t>(10 + i);
    }
  }
};
constexpr HexTable kHexValue;

bool decode_hex_scalar(const unsigned char* p, size_t n, uint8_t* out) {
  int bad = 0;
  for (size_t i = 0; i < n; ++i) {
    int hi = kHexValue.v[p[2 * i]];
    int lo = kHexValue.v[p[2 * i + 1]];
    bad |= hi | lo;  // any -1 sets the sign bit
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return bad >= 0;
}

}  // namespace

std::optional<std::vector<uint8_t>> parse_hex_bytes(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::vector<uint8_t> out(hex.size() / 2);
  if (!decode_hex_into(hex, out.data())) return std::nullopt;
  return out;
}

#if defined(__x86_64__)
namespace {

// One body for both vector widths (GCC vector extensions): the nibble values of 16 or 32 hex
// digits, and in `ok` all ones in the lanes that hold a hex digit. Upper case is folded by setting
// bit 5 (digits already have it); a byte that only looks like a digit once bit 5 is set
// (0x10..0x19) must not count, so digits are checked on the original byte too. Bytes >= 0x80 are
// negative: never in range.
using Bytes16 = signed char __attribute__((vector_size(16)));
using Bytes32 = signed char __attribute__((vector_size(32)));
using UBytes16 = unsigned char __attribute__((vector_size(16)));
using UBytes32 = unsigned char __attribute__((vector_size(32)));

// V: signed bytes (the compares), U: the same width unsigned (the differences, which overflow a
// signed byte in the lanes that the masks then drop). By reference: a 32-byte vector passed by
// value would need the AVX calling convention.
template <class V, class U>
__attribute__((always_inline)) inline void hex_nibbles(const V& v, V& nib, V& ok) {
  V lv = v | 0x20;
  V digit = (lv >= '0') & (lv <= '9') & (v == lv);
  V alpha = (lv >= 'a') & (lv <= 'f');
  ok = digit | alpha;
  auto u = reinterpret_cast<U>(lv);
  nib = (digit & reinterpret_cast<V>(u - '0')) | (alpha & reinterpret_cast<V>(u - ('a' - 10)));
}

// 32 digits -> 16 bytes, the pairs packed with one multiply-add (even * 16 + odd). The bytes done
// so far; stops early at a bad digit (the SSE2 path then finds it).
__attribute__((target("avx2"))) size_t decode_hex_avx2(const unsigned char* p, size_t n,
                                                       uint8_t* out) {
  const __m256i kpair = _mm256_set1_epi16(0x0110);  // bytes 16, 1
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    Bytes32 v, nib, ok;
    std::memcpy(&v, p + 2 * i, sizeof v);
    hex_nibbles<Bytes32, UBytes32>(v, nib, ok);
    if (_mm256_movemask_epi8(reinterpret_cast<__m256i>(ok)) != -1) break;
    __m256i words = _mm256_maddubs_epi16(reinterpret_cast<__m256i>(nib), kpair);
    // packus works per 128-bit lane: lane 0's 8 bytes land in quadword 0, lane 1's in 2.
    __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi16(words, words), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_castsi256_si128(packed));
  }
  return i;
}

// AVX2 usable: the processor has it (CPUID.(EAX=7,ECX=0):EBX bit 5) and the OS saves the YMM
// registers (OSXSAVE, then XCR0 bits 1 and 2; Intel SDM Vol. 1 §14.3). Asked on first use only:
// __builtin_cpu_supports would link libgcc's detection, a constructor that runs ~10 `cpuid`s at
// every command's start, each a ~7 µs trap to the hypervisor on a VM. (glibc's
// CPU_FEATURE_ACTIVE would cost nothing, but its header does not compile as C++ under clang.)
bool detect_avx2() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0 || (c & bit_OSXSAVE) == 0 || (c & bit_AVX) == 0)
    return false;
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & 6u) != 6u || __get_cpuid_max(0, nullptr) < 7) return false;
  __cpuid_count(7, 0, a, b, c, d);
  return (b & bit_AVX2) != 0;
}

bool have_avx2() {
  static const bool yes = detect_avx2();
  return yes;
}

}  // namespace
#endif

bool decode_hex_into_sse2(std::string_view hex, uint8_t* out) {
  const auto* p = reinterpret_cast<const unsigned char*>(hex.data());
  size_t n = hex.size() / 2;
  size_t i = 0;
#if defined(__x86_64__)
  // 16 digits -> 8 bytes: pairs packed as (even << 4) | odd.
  const __m128i klow = _mm_set1_epi16(0x00ff);
  for (; i + 8 <= n; i += 8) {
    Bytes16 v, nib, ok;
    std::memcpy(&v, p + 2 * i, sizeof v);
    hex_nibbles<Bytes16, UBytes16>(v, nib, ok);
    if (_mm_movemask_epi8(reinterpret_cast<__m128i>(ok)) != 0xffff) return false;
    auto nibbles = reinterpret_cast<__m128i>(nib);
    __m128i hi = _mm_and_si128(_mm_slli_epi16(nibbles, 4), klow);
    __m128i lo = _mm_srli_epi16(nibbles, 8);
    __m128i packed = _mm_packus_epi16(_mm_or_si128(hi, lo), _mm_setzero_si128());
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + i), packed);
  }
#endif
  return decode_hex_scalar(p + 2 * i, n - i, out + i);
}

bool decode_hex_into(std::string_view hex, uint8_t* out) {
#if defined(__x86_64__)
  // AVX2 where the processor has it (the trace readers' largest single cost: every recorded
  // buffer, before and after the call); a bad digit is left to the SSE2 path to find.
  if (hex.size() >= 32 && have_avx2()) {
    size_t done =
        decode_hex_avx2(reinterpret_cast<const unsigned char*>(hex.data()), hex.size() / 2, out);
    hex.remove_prefix(2 * done);
    out += done;
  }
#endif
  return decode_hex_into_sse2(hex, out);
}

bool hex_decoding_uses_avx2() {
#if defined(__x86_64__)
  return have_avx2();
#else
  return false;
#endif
}

void encode_hex_into(const uint8_t* bytes, size_t n, char* out) {
  size_t i = 0;
#if defined(__x86_64__)
  // Each nibble n becomes '0' + n, plus 'a' - '0' - 10 when n > 9; the high and low nibbles of
  // each byte are then interleaved (high first).
  const __m128i k0f = _mm_set1_epi8(0x0f), k9 = _mm_set1_epi8(9);
  const __m128i k0 = _mm_set1_epi8('0'), kletter = _mm_set1_epi8('a' - '0' - 10);
  auto digits = [&](__m128i nib) {
    return _mm_add_epi8(_mm_add_epi8(nib, k0), _mm_and_si128(_mm_cmpgt_epi8(nib, k9), kletter));
  };
  for (; i + 16 <= n; i += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + i));
    __m128i hi = digits(_mm_and_si128(_mm_srli_epi16(v, 4), k0f));
    __m128i lo = digits(_mm_and_si128(v, k0f));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i), _mm_unpacklo_epi8(hi, lo));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i + 16), _mm_unpackhi_epi8(hi, lo));
  }
#endif
  static constexpr char kHex[] = "0123456789abcdef";
  for (; i < n; ++i) {
    out[2 * i] = kHex[bytes[i] >> 4];
    out[2 * i + 1] = kHex[bytes[i] & 15];
  }
}

void append_hex(std::string& out, ByteView bytes) {
  size_t at = out.size();
  out.resize(at + 2 * bytes.size());
  encode_hex_into(bytes.data(), bytes.size(), out.data() + at);
}

std::string to_hex(ByteView bytes) {
  std::string s;
  append_hex(s, bytes);
  return s;
}

std::optional<uint64_t> parse_u64(std::string_view text, bool allow_decimal) {
  int base = allow_decimal ? 10 : 16;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
    base = 16;
  }
  if (text.empty()) return std::nullopt;
  uint64_t v = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

std::string hex_dump(ByteView bytes, uint64_t base, size_t max_bytes) {
  std::string out;
  uint64_t n = bytes.size() < max_bytes ? bytes.size() : max_bytes;
  for (uint64_t line = 0; line < n; line += 16) {
    out += fmt::format("{:08x} ", base + line);
    std::string ascii;
    for (uint64_t i = line; i < line + 16; ++i) {
      if (i < n) {
        uint8_t b = bytes.data()[i];
        out += fmt::format(" {:02x}", b);
        ascii.push_back(b >= 0x20 && b < 0x7f ? static_cast<char>(b) : '.');
      } else {
        out += "   ";
      }
    }
    out += "  " + ascii + "\n";
  }
  if (n < bytes.size()) out += fmt::format("… {} more bytes\n", bytes.size() - n);
  return out;
}

}  // namespace cudatool
