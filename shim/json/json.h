// A strict, small JSON reader (RFC 8259, nothing more) for the files strangers
// give: safetensors headers and indexes, config and tokenizer files, chat messages:
// the text must be valid UTF-8 (no
// overlong forms, no surrogates, nothing past U+10FFFF), strings may not
// hold raw control characters, \u escapes must pair surrogates, objects may
// not repeat a key, nesting is limited to kMaxDepth levels, and nothing but
// whitespace may follow the value. Numbers are kept as their text; the
// reader of a field decides what it accepts (as_u64). Errors throw
// JsonError with the byte offset; the caller adds the file's name.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ctorch {
namespace json {

// serde_json's default recursion limit, which the Python package inherits.
constexpr int kMaxDepth = 128;

class JsonError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Value {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  bool boolean = false;
  std::string text;  // String: the decoded UTF-8; Number: the literal as written
  std::vector<Value> items;
  std::vector<std::pair<std::string, Value>> members;  // in document order, keys distinct

  const Value *find(const std::string &key) const {
    for (const auto &m : members)
      if (m.first == key) return &m.second;
    return nullptr;
  }
};

// The non-negative integer a Number holds, if it is one (digits only, no
// sign, fraction or exponent) and fits 64 bits; false otherwise.
bool as_u64(const Value &v, uint64_t *out);

// Called with the bytes each value takes (its node and decoded text) as
// they are made, so the caller can bound what a parse allocates.
using Charge = void (*)(void *ctx, uint64_t bytes);

// Parses the whole of [p, p + n). Throws JsonError.
Value parse(const char *p, size_t n, Charge charge = nullptr, void *ctx = nullptr);

// Checks [p, p + n) is valid UTF-8; false with the offset of the first bad byte.
bool valid_utf8(const char *p, size_t n, size_t *bad_at);

// Appends s as a JSON string literal, escaped exactly as serde_json does
// (the Python package's writer): \" \\ \b \f \n \r \t, other control
// characters as \u00xx (lowercase hex), everything else (UTF-8 included)
// as is.
void append_string(std::string &out, const std::string &s);

}  // namespace json
}  // namespace ctorch
