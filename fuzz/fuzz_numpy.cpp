// Harness: bytes into the NumPy readers (ctorch_npy_load_from_buffer,
// ctorch_npz_load_from_buffer, and ctorch_npy_load on the same bytes as a
// file, which must give the same status). First byte chooses how the rest
// is used:
//   even: the raw bytes (magic, version, header length, zip container);
//   odd:  [u8 version][u16 length L][L bytes of header text][data], wrapped
//         in a well-formed preamble, which reaches the header's parser and
//         the size checks past the magic.
// A successful load is read completely, saved again and reloaded: the
// second save must give the same bytes (the writer is deterministic).
#include "fuzz_util.h"
#include "mem_file.h"

#include <string>
#include <vector>

namespace {

// read_all, then the .npy round trip: ctorch's own bytes load back and save
// to the same bytes.
void inspect(ctorch_tensor t) {
  if (!fz::read_all(t)) return;
  size_t len = 0;
  if (FZ(ctorch_npy_save_to_buffer(&len, nullptr, 0, t)) != CTORCH_OK) return;
  std::vector<unsigned char> a(len + 1), b(len + 1);
  size_t len2 = 0;
  FZ(ctorch_npy_save_to_buffer(&len2, a.data(), a.size(), t));
  ctorch_tensor back = nullptr;
  if (FZ(ctorch_npy_load_from_buffer(&back, a.data(), len2)) != CTORCH_OK)
    fz::violation("ctorch's own .npy bytes do not load", "ctorch_npy_load_from_buffer", CTORCH_VALUE);
  size_t len3 = 0;
  FZ(ctorch_npy_save_to_buffer(&len3, b.data(), b.size(), back));
  if (len3 != len2 || std::memcmp(a.data(), b.data(), len2) != 0)
    fz::violation("saving a reloaded array changed its bytes", "ctorch_npy_save_to_buffer", CTORCH_OK);
  ctorch_tensor_free(back);
}

void load_all(const uint8_t *bytes, size_t n) {
  ctorch_tensor t = nullptr, tf = nullptr;
  ctorch_status sb = FZ(ctorch_npy_load_from_buffer(&t, bytes, n));
  fz::MemFile f(bytes, n);
  ctorch_status sf = FZ(ctorch_npy_load(&tf, f.path()));
  if (sb != sf) fz::violation("the buffer form's status differs from the file form's", "ctorch_npy_load_from_buffer", sb);
  if (t) {
    inspect(t);
    ctorch_tensor_free(t);
  }
  if (tf) ctorch_tensor_free(tf);
  ctorch_tensor_dict d = nullptr;
  if (FZ(ctorch_npz_load_from_buffer(&d, bytes, n)) == CTORCH_OK) {
    size_t k = 0;
    FZ(ctorch_tensor_dict_size(&k, d));
    for (size_t i = 0; i < k; ++i) {
      ctorch_tensor v = nullptr;
      if (FZ(ctorch_tensor_dict_get(&v, d, i)) == CTORCH_OK) {
        inspect(v);
        ctorch_tensor_free(v);
      }
    }
    ctorch_tensor_dict_free(d);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz::init_once();
  if (size == 0) return 0;
  if ((data[0] & 1) == 0) {
    load_all(data + 1, size - 1);
    return 0;
  }
  fz::Bytes in{data + 1, size - 1};
  uint8_t version = in.u8() % 4;
  size_t L = in.u16();
  const uint8_t *h = nullptr;
  size_t got = in.take(&h, L);
  const uint8_t *rest = nullptr;
  size_t nrest = in.take(&rest, in.n);
  std::string file = "\x93NUMPY";
  file += static_cast<char>(version ? version : 1);
  file += '\0';
  for (int k = 0; k < (version >= 2 ? 4 : 2); ++k) file += static_cast<char>((got >> (8 * k)) & 0xFF);
  file.append(reinterpret_cast<const char *>(h), got);
  file.append(reinterpret_cast<const char *>(rest), nrest);
  load_all(reinterpret_cast<const uint8_t *>(file.data()), file.size());
  return 0;
}
