// text.h - the small std::string predicates several folders need, written
// once (a unity build compiles a folder's files together, so each file's own
// copy in an anonymous namespace collided).
#pragma once

#include <cstdlib>
#include <cstring>
#include <new>

#include <string>

namespace ctorch {
namespace text {

// A malloc'd copy of s for a `char **` result (the caller frees it with
// ctorch_string_free); throws std::bad_alloc (OUT_OF_MEMORY) when out of memory.
inline char *c_string(const std::string &s) {
  char *p = static_cast<char *>(std::malloc(s.size() + 1));
  if (!p) throw std::bad_alloc();
  std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

inline bool starts_with(const std::string &s, const std::string &p) { return s.compare(0, p.size(), p) == 0; }
inline bool ends_with(const std::string &s, const std::string &e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

// ASCII letters in lower case, other bytes as they are, whatever the
// process's locale (std::tolower follows it): zip names compared without
// regard to case (as miniz, which PyTorch's reader uses, compares them), and
// c10's dtype and engine names as Python spells them.
inline char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
inline std::string ascii_lower(std::string s) {
  for (char &c : s) c = ascii_lower(c);
  return s;
}

}  // namespace text
}  // namespace ctorch
