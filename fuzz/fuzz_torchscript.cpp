// Harness (b2): bytes into the TorchScript loader (ctorch_module_load).
// First byte chooses how the rest is used:
//   even: the raw file;
//   odd:  three length-prefixed (u16) parts - TorchScript source for
//         archive/code/__torch__.py, archive/data.pkl, archive/constants.pkl -
//         then the storage bytes (archive/data/0 and /1), wrapped in a
//         well-formed archive so the importer gets past the zip.
// A loaded module is queried (methods, parameters, buffers) but never run:
// fuzzed TorchScript can loop forever, and running it is not loading it.
#include "fuzz_util.h"
#include "mem_file.h"
#include "zip_writer.h"

#include <vector>

namespace {

void load(const char *path, bool map_cpu) {
  ctorch_module m = nullptr;
  ctorch_device cpu = ctorch_device_cpu();
  if (FZ(ctorch_module_load(&m, path, map_cpu ? &cpu : nullptr)) != CTORCH_OK) {
    if (m) fz::violation("failure left a handle", "ctorch_module_load", CTORCH_VALUE);
    return;
  }
  int has = 0, training = 0;
  FZ(ctorch_module_has_method(&has, m, "forward"));
  FZ(ctorch_module_is_training(&training, m));
  ctorch_tensor_dict d = nullptr;
  if (FZ(ctorch_module_named_parameters(&d, m)) == CTORCH_OK) ctorch_tensor_dict_free(d);
  if (FZ(ctorch_module_named_buffers(&d, m)) == CTORCH_OK) ctorch_tensor_dict_free(d);
  FZ(ctorch_module_eval(m));
  ctorch_module_free(m);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz::init_once();
  if (size == 0) return 0;
  bool map_cpu = data[0] & 2;
  if ((data[0] & 1) == 0) {
    fz::MemFile f(data + 1, size - 1);
    load(f.path(), map_cpu);
    return 0;
  }
  fz::Bytes in{data + 1, size - 1};
  const uint8_t *part[3];
  size_t len[3];
  for (int i = 0; i < 3; ++i) len[i] = in.take(&part[i], in.u16());
  fz::ZipWriter z;
  z.add("archive/data.pkl", part[1], len[1]);
  z.add("archive/code/__torch__.py", part[0], len[0]);
  z.add("archive/constants.pkl", part[2], len[2]);
  const uint8_t *rest = nullptr;
  size_t nrest = in.take(&rest, in.n);
  z.add("archive/data/0", rest, nrest);
  z.add("archive/data/1", rest, nrest);
  z.add("archive/version", std::string("3\n"));
  std::vector<uint8_t> file = z.finish();
  fz::MemFile f(file.data(), file.size());
  load(f.path(), map_cpu);
  return 0;
}
