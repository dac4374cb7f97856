// Harness (b1): bytes into the checkpoint loader (ctorch_load and
// ctorch_load_dict, and their buffer forms ctorch_load_from_buffer and
// ctorch_load_dict_from_buffer on the same bytes, which must give the same
// status: one reader for both). First byte chooses how the rest is used:
//   even: the raw file (zip container, CRCs, legacy formats, garbage);
//   odd:  [u16 length L][L bytes of pickle][storage bytes], wrapped in a
//         well-formed torch.save archive (archive/data.pkl, archive/version,
//         archive/data/0 and /1 holding the storage bytes), which reaches
//         ctorch's own unpickler past the zip layer.
// A successful load is then read completely (copy_to: ASan checks the
// bytes it copies lie inside the loaded storage).
#include "fuzz_util.h"
#include "mem_file.h"
#include "zip_writer.h"

#include <vector>

namespace {

void load_both(const uint8_t *bytes, size_t n_bytes) {
  fz::MemFile f(bytes, n_bytes);
  const char *path = f.path();
  ctorch_tensor t = nullptr, tb = nullptr;
  ctorch_status sb = FZ(ctorch_load_from_buffer(&tb, bytes, n_bytes));
  ctorch_status sf = FZ(ctorch_load(&t, path));
  if (sb != sf) fz::violation("the buffer form's status differs from the file form's", "ctorch_load_from_buffer", sb);
  if (tb) {
    fz::inspect(tb);
    ctorch_tensor_free(tb);
  }
  ctorch_tensor_dict db = nullptr;
  ctorch_status dsb = FZ(ctorch_load_dict_from_buffer(&db, bytes, n_bytes));
  if (db) ctorch_tensor_dict_free(db);
  if (sf == CTORCH_OK) {
    if (!t) fz::violation("OK without a tensor", "ctorch_load", CTORCH_OK);
    fz::inspect(t);
    ctorch_tensor_free(t);
  } else if (t) {
    fz::violation("failure left a handle", "ctorch_load", CTORCH_VALUE);
  }
  ctorch_tensor_dict d = nullptr;
  ctorch_status dsf = FZ(ctorch_load_dict(&d, path));
  if (dsb != dsf) fz::violation("the buffer form's status differs from the file form's", "ctorch_load_dict_from_buffer", dsb);
  if (dsf == CTORCH_OK) {
    size_t n = 0;
    FZ(ctorch_tensor_dict_size(&n, d));
    for (size_t i = 0; i < n; ++i) {
      const char *k = nullptr;
      FZ(ctorch_tensor_dict_key(&k, d, i));
      ctorch_tensor v = nullptr;
      if (FZ(ctorch_tensor_dict_get(&v, d, i)) == CTORCH_OK) {
        fz::inspect(v);
        ctorch_tensor_free(v);
      }
      if (FZ(ctorch_tensor_dict_find(&v, d, k)) == CTORCH_OK) ctorch_tensor_free(v);
    }
    ctorch_tensor_dict_free(d);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz::init_once();
  if (size == 0) return 0;
  if ((data[0] & 1) == 0) {
    load_both(data + 1, size - 1);
    return 0;
  }
  fz::Bytes in{data + 1, size - 1};
  size_t L = in.u16();
  const uint8_t *pkl = nullptr;
  size_t got = in.take(&pkl, L);
  const uint8_t *rest = nullptr;
  size_t nrest = in.take(&rest, in.n);
  fz::ZipWriter z;
  z.add("archive/data.pkl", pkl, got);
  z.add("archive/byteorder", std::string("little"));
  z.add("archive/data/0", rest, nrest);
  z.add("archive/data/1", rest, nrest);
  z.add("archive/version", std::string("3\n"));
  std::vector<uint8_t> file = z.finish();
  load_both(file.data(), file.size());
  return 0;
}
