// text.h - the small std::string predicates several folders need, written
// once (a unity build compiles a folder's files together, so each file's own
// copy in an anonymous namespace collided).
#pragma once

#include <string>

namespace ctorch {
namespace text {

inline bool starts_with(const std::string &s, const std::string &p) { return s.compare(0, p.size(), p) == 0; }
inline bool ends_with(const std::string &s, const std::string &e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

}  // namespace text
}  // namespace ctorch
