// A plain driver (no libFuzzer) that replays saved inputs through a harness:
// every file named on the command line, or every file in a named directory.
// Built into the normal test suite (tests/harden) so the corpus and every
// reproducer stay regression tests under g++, ASan and UBSan alike.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool run_file(const std::string &path) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) {
    std::perror(path.c_str());
    return false;
  }
  std::vector<uint8_t> buf;
  uint8_t chunk[65536];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0) buf.insert(buf.end(), chunk, chunk + n);
  std::fclose(f);
  if (std::getenv("CTORCH_FUZZ_VERBOSE")) std::fprintf(stderr, "%s\n", path.c_str());  // fuzz_util.h
  LLVMFuzzerTestOneInput(buf.data(), buf.size());
  return true;
}

int main(int argc, char **argv) {
  size_t count = 0;
  for (int i = 1; i < argc; ++i) {
    struct stat sb;
    if (stat(argv[i], &sb) != 0) {
      std::perror(argv[i]);
      return 1;
    }
    std::vector<std::string> files;
    if (S_ISDIR(sb.st_mode)) {
      DIR *d = opendir(argv[i]);
      if (!d) return 1;
      while (struct dirent *e = readdir(d))
        if (e->d_name[0] != '.') files.push_back(std::string(argv[i]) + "/" + e->d_name);
      closedir(d);
      std::sort(files.begin(), files.end());
    } else {
      files.push_back(argv[i]);
    }
    for (const auto &f : files) {
      if (!run_file(f)) return 1;
      ++count;
    }
  }
  std::printf("replayed %zu inputs without a crash or contract violation\n", count);
  return count ? 0 : 1;
}
