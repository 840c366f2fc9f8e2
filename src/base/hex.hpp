// Hex text <-> bytes and numbers, as used in traces, command-line addresses and dumps.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.hpp"

namespace cudatool {

// "0a1b…" (even length, upper or lower case, no prefix) to bytes; nothing on bad input.
std::optional<std::vector<uint8_t>> parse_hex_bytes(std::string_view hex);
// Decodes hex.size() / 2 bytes of "0a1B…" (hex.size() even) into out; false when a character is
// not a hex digit (out then holds garbage). 32 digits at a time with AVX2 where the processor has
// it, else 16 with SSE2, on x86-64: trace readers spend much of their time here on large argument
// buffers.
bool decode_hex_into(std::string_view hex, uint8_t* out);
// The same without AVX2 (tests compare both paths on a processor that has it).
bool decode_hex_into_sse2(std::string_view hex, uint8_t* out);
// Whether decode_hex_into takes the AVX2 path on this processor.
bool hex_decoding_uses_avx2();
// Writes the lower-case hex digits of n bytes, 2n characters, to out. 16 bytes at a time with
// SSE2 on x86-64: the tracer writes every recorded buffer this way, before and after the call.
void encode_hex_into(const uint8_t* bytes, size_t n, char* out);
// Appends lower-case hex digits of the bytes to out.
void append_hex(std::string& out, ByteView bytes);
std::string to_hex(ByteView bytes);
// "0x1f", "1f" (hex), or decimal when `allow_decimal` and no prefix: a number that fits 64 bits.
// Numbers with a 0x prefix are always hex; without one, decimal if allow_decimal else hex.
std::optional<uint64_t> parse_u64(std::string_view text, bool allow_decimal = true);
// Classic 16-bytes-per-line dump with offsets relative to `base`, for unknown structures.
std::string hex_dump(ByteView bytes, uint64_t base, size_t max_bytes = 256);

}  // namespace cudatool
