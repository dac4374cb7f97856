// Harness: bytes into the safetensors reader (ctorch_safetensors_load). The
// first byte chooses how the rest is used:
//   even: the raw file (header length, JSON, offsets, data);
//   odd:  [u16 length L][L bytes of JSON header][data], written as a file
//         whose 8-byte header length is L, so that mutations reach the JSON
//         reader and the offset checks past the length check.
// A successful load is read completely (copy_to: ASan checks every byte it
// copies lies in the mapping or the copy), summed, its metadata read, then
// saved with ctorch_safetensors_save and loaded again: what ctorch accepts
// it must write and accept back with the same number of tensors.
#include "fuzz_util.h"
#include "mem_file.h"

#include <unistd.h>

#include <string>
#include <vector>

namespace {

const std::string &scratch_path() {
  static const std::string p = "/tmp/ctorch-fuzz-safetensors-" + std::to_string(getpid()) + ".safetensors";
  return p;
}

void load(const char *path) {
  ctorch_tensor_dict d = nullptr;
  if (FZ(ctorch_safetensors_load(&d, path, nullptr)) != CTORCH_OK) {
    if (d) fz::violation("failure left a handle", "ctorch_safetensors_load", CTORCH_VALUE);
    return;
  }
  if (!d) fz::violation("OK without a dict", "ctorch_safetensors_load", CTORCH_OK);
  size_t n = 0, nm = 0;
  FZ(ctorch_tensor_dict_size(&n, d));
  std::vector<const char *> names(n);
  std::vector<ctorch_tensor> ts(n, nullptr);
  for (size_t i = 0; i < n; ++i) {
    FZ(ctorch_tensor_dict_key(&names[i], d, i));
    if (FZ(ctorch_tensor_dict_get(&ts[i], d, i)) == CTORCH_OK) fz::inspect(ts[i]);
  }
  FZ(ctorch_tensor_dict_metadata_size(&nm, d));
  std::vector<const char *> keys(nm), values(nm);
  for (size_t i = 0; i < nm; ++i) {
    FZ(ctorch_tensor_dict_metadata_key(&keys[i], d, i));
    FZ(ctorch_tensor_dict_metadata_value(&values[i], d, i));
  }
  const std::string &out = scratch_path();
  ctorch_status st = FZ(ctorch_safetensors_save(out.c_str(), names.data(), ts.data(), n, keys.data(), values.data(), nm));
  // Metadata keys/values with an embedded NUL are cut short by the C
  // strings and may then repeat: the only refusal expected here.
  if (st == CTORCH_OK) {
    ctorch_tensor_dict back = nullptr;
    if (FZ(ctorch_safetensors_load(&back, out.c_str(), nullptr)) != CTORCH_OK)
      fz::violation("a file ctorch wrote is refused", "ctorch_safetensors_load", CTORCH_VALUE);
    size_t nb = 0;
    FZ(ctorch_tensor_dict_size(&nb, back));
    if (nb != n) fz::violation("a rewritten file lost tensors", "ctorch_safetensors_save", CTORCH_OK);
    ctorch_tensor_dict_free(back);
  } else if (st != CTORCH_INVALID_ARGUMENT) {
    fz::violation("a loaded dict could not be saved", "ctorch_safetensors_save", st);
  }
  unlink(out.c_str());
  for (ctorch_tensor t : ts) ctorch_tensor_free(t);
  ctorch_tensor_dict_free(d);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz::init_once();
  if (size == 0) return 0;
  if ((data[0] & 1) == 0) {
    fz::MemFile f(data + 1, size - 1);
    load(f.path());
    return 0;
  }
  fz::Bytes in{data + 1, size - 1};
  size_t L = in.u16();
  const uint8_t *hdr = nullptr;
  size_t got = in.take(&hdr, L);
  std::vector<uint8_t> file(8);
  for (int i = 0; i < 8; ++i) file[i] = (uint8_t)((uint64_t)got >> (8 * i));
  file.insert(file.end(), hdr, hdr + got);
  file.insert(file.end(), in.p, in.p + in.n);
  fz::MemFile f(file.data(), file.size());
  load(f.path());
  return 0;
}
