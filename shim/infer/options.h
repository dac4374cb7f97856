// The options text both inference optimisers read (optimize.cpp for module
// trees, models/jit_optimize.cpp for TorchScript): "key=value,key=value",
// items in order, empty items skipped, NULL or "" for none. Part of infer/'s
// interface (models/ includes it).
#pragma once

#include <string>
#include <vector>

namespace ctorch {
namespace infer {

// One item: as written (for messages), and split at its first '=' (value
// "" where there is none).
struct OptionItem {
  std::string text, key, value;
};

std::vector<OptionItem> option_items(const char *text);

// A "0"/"1" value into *flag; false (and *flag untouched) for anything else.
bool flag_value(const OptionItem &item, bool *flag);

// The arithmetic an optimised model runs in (option precision=NAME).
enum class Precision { Float32, BF16, Int8Dynamic, Int8Static };
// "float32", "bf16", "int8-dynamic", "int8-static".
const char *precision_name(Precision p);
// item's value as a precision into *p; false (and *p untouched) for an unknown name.
bool precision_value(const OptionItem &item, Precision *p);

}  // namespace infer
}  // namespace ctorch
