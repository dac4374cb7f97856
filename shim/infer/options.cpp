// The options text of the inference optimisers (options.h).
#include "infer/options.h"

namespace ctorch {
namespace infer {

std::vector<OptionItem> option_items(const char *text) {
  std::vector<OptionItem> items;
  if (!text) return items;
  std::string s(text);
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    items.push_back({item, item.substr(0, eq), eq == std::string::npos ? "" : item.substr(eq + 1)});
  }
  return items;
}

bool flag_value(const OptionItem &item, bool *flag) {
  if (item.value != "0" && item.value != "1") return false;
  *flag = item.value == "1";
  return true;
}

static const char *const kPrecisionNames[] = {"float32", "bf16", "int8-dynamic", "int8-static"};

const char *precision_name(Precision p) { return kPrecisionNames[static_cast<int>(p)]; }

bool precision_value(const OptionItem &item, Precision *p) {
  for (int i = 0; i < 4; ++i)
    if (item.value == kPrecisionNames[i]) {
      *p = static_cast<Precision>(i);
      return true;
    }
  return false;
}

}  // namespace infer
}  // namespace ctorch
