// The GGUF reader (versions 2 and 3): the header, every metadata key/value,
// the tensor table, all checked against the file's size before anything is
// allocated from them; the file memory-mapped, never read whole. Tensors
// come out as at::Tensor (F32, F16, BF16 as views of the mapping; Q8_0,
// Q4_0, Q4_1, Q4_K, Q6_K dequantised into float32, bit-equal to the gguf
// package's gguf.quants.dequantize) or as their raw block bytes.
//
// A GgufFile is immutable once opened: every method is safe from many
// threads at once. Every refusal throws ctorch::StatusError
// (CTORCH_INVALID_ARGUMENT for a malformed file or a wrong key type,
// CTORCH_IO for a file that cannot be read, CTORCH_OUT_OF_MEMORY past the
// load budget), its message naming the file and what is wrong.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lm/vocab.h"

namespace ctorch {
class LoadBudget;  // files/files.h
namespace lm {

// GGUF's metadata value types (gguf_type), numbered as in the file.
enum class GgufType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};
const char *gguf_type_name(GgufType t);

// The tensor types this reader turns into tensors (ggml_type numbers). A
// file may hold others: it opens, and tensor() refuses those by name;
// raw() hands out any type's bytes.
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q8_0 = 8,
  Q4_K = 12,
  Q6_K = 14,
  BF16 = 30,
};
// The type's name ("Q4_K"), or "type N" for a number ggml does not define.
std::string ggml_type_name(uint32_t type);

struct GgufTensorInfo {
  std::string name;
  uint32_t type = 0;          // ggml_type, possibly one tensor() does not convert
  std::vector<int64_t> ne;    // the file's dimensions, fastest-varying first (ggml's ne[])
  std::vector<int64_t> shape; // torch's order: ne reversed (ne[0] is the last dimension)
  int64_t numel = 0;
  uint64_t offset = 0;        // from the start of the data section (aligned to alignment())
  uint64_t nbytes = 0;        // the bytes of its data (whole blocks)
};

class GgufFile {
 public:
  // Opens and checks the whole table of contents (header, metadata, tensor
  // infos); tensor data is checked to lie inside the file, not read.
  static std::shared_ptr<const GgufFile> open(const std::string &path);
  ~GgufFile();
  GgufFile(const GgufFile &) = delete;
  GgufFile &operator=(const GgufFile &) = delete;

  const std::string &path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_at_; }  // the data section's start in the file

  // ---- metadata ----------------------------------------------------------
  // Keys in file order.
  std::vector<std::string> keys() const;
  bool has(const std::string &key) const;
  // The key's type (ARRAY for arrays); refused if absent.
  GgufType type_of(const std::string &key) const;
  // An array's element type and length; refused if absent or not an array.
  GgufType array_type(const std::string &key) const;
  uint64_t array_size(const std::string &key) const;

  // Typed getters: refused (INVALID_ARGUMENT, naming the file, the key, its
  // type and the type asked for) if the key is absent or of another type.
  // u32/u64/i64 accept any integer type whose value fits the result (files
  // in the wild write a count as UINT32, INT32 or UINT64); f32 accepts
  // FLOAT32 and FLOAT64 (rounded); boolean and str are strict.
  uint32_t u32(const std::string &key) const;
  uint64_t u64(const std::string &key) const;
  int64_t i64(const std::string &key) const;
  float f32(const std::string &key) const;
  bool boolean(const std::string &key) const;
  std::string str(const std::string &key) const;
  // The same with a default when the key is absent (a present key of the
  // wrong type is still refused).
  uint32_t u32_or(const std::string &key, uint32_t dflt) const;
  uint64_t u64_or(const std::string &key, uint64_t dflt) const;
  int64_t i64_or(const std::string &key, int64_t dflt) const;
  float f32_or(const std::string &key, float dflt) const;
  bool boolean_or(const std::string &key, bool dflt) const;
  std::string str_or(const std::string &key, const std::string &dflt) const;

  // Arrays: refused if absent, not an array, or of another element type
  // (int_array accepts any integer element type, converting each value,
  // refused if one does not fit int64; f32_array accepts FLOAT32 and
  // FLOAT64). Memory is charged against the load budget.
  std::vector<std::string> str_array(const std::string &key) const;
  std::vector<float> f32_array(const std::string &key) const;
  std::vector<int64_t> int_array(const std::string &key) const;
  std::vector<bool> bool_array(const std::string &key) const;

  // One value as text, for describe/debug output: scalars printed, strings
  // quoted, arrays as "[TYPE x N]" (nested arrays shown by their type).
  std::string value_text(const std::string &key) const;

  // ---- tensors -----------------------------------------------------------
  // In file order.
  const std::vector<GgufTensorInfo> &tensors() const { return tensors_; }
  const GgufTensorInfo *find(const std::string &name) const;  // nullptr if absent
  const GgufTensorInfo &info(const std::string &name) const;  // refused if absent

  // The tensor in torch's shape: F32, F16, BF16 in their own dtype as a view
  // of the mapping where its data is aligned for the dtype (a copy
  // otherwise); Q8_0, Q4_0, Q4_1, Q4_K, Q6_K dequantised into a new float32
  // tensor. Other types are refused by name. A view keeps the mapping (and
  // so the file's pages) alive after the GgufFile is gone.
  //
  // The memory a tensor takes (a dequantised or copied one) is charged
  // against `budget` where given (a model loader passes one LoadBudget for
  // all its tensors, so ctorch_set_load_limit bounds the whole load),
  // otherwise against a LoadBudget of this call alone.
  at::Tensor tensor(const std::string &name, LoadBudget *budget = nullptr) const;
  // As tensor(), always float32 (F16/BF16 converted).
  at::Tensor tensor_f32(const std::string &name, LoadBudget *budget = nullptr) const;
  // The tensor's data bytes as stored (whole blocks for quantised types): a
  // 1-D uint8 view of the mapping of info(name).nbytes bytes, keeping the
  // mapping alive. For quantised kernels over the blocks.
  at::Tensor raw(const std::string &name) const;
  // The same bytes as a pointer into the mapping, valid while this file
  // (or any tensor viewing it) lives.
  const uint8_t *raw_data(const GgufTensorInfo &t) const;
  // Gives back this process's resident pages of the tensor's data (the
  // pages wholly inside it), for a quantised tensor whose blocks were
  // copied elsewhere (repacked, dequantised): the mapping is private, so a
  // page read again later comes back from the file. Quantised tensors are
  // never handed out as typed views, so no write can be lost with them.
  void release(const GgufTensorInfo &t) const;

  // ---- vocabulary --------------------------------------------------------
  // tokenizer.ggml.* and tokenizer.chat_template into a VocabSpec. Refused
  // if tokenizer.ggml.model or tokenizer.ggml.tokens is absent, if scores or
  // token_type do not have one entry per token (or a type outside 0..6), or
  // a special-token id lies outside the vocabulary. Absent keys take
  // llama.cpp's defaults: pre "default"; add_space_prefix true for model
  // "llama" (SentencePiece); add_bos true for "llama" and for the
  // pre-tokenizers llama.cpp adds BOS for (llama-bpe's group, tekken,
  // chameleon), false otherwise; add_eos false; no special ids (-1); no
  // scores, types or merges (empty).
  VocabSpec vocab() const;

  struct Impl;

 private:
  GgufFile() = default;
  std::string path_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_at_ = 0;
  std::vector<GgufTensorInfo> tensors_;
  std::unique_ptr<Impl> impl_;
};

// Dequantises n elements (a multiple of the type's block size) of quantised
// blocks at src into dst, bit-equal to gguf.quants.dequantize. type: Q8_0,
// Q4_0, Q4_1, Q4_K or Q6_K. For tests and for kernels that unpack a slice.
void gguf_dequantize(GgmlType type, const uint8_t *src, float *dst, int64_t n);
// Block size in elements and bytes of any ggml type, including those
// tensor() does not convert (0, 0 for a number ggml does not define: such a
// tensor is refused when the file is opened, its size being unknown).
void ggml_block(uint32_t type, int64_t *block_elems, int64_t *block_bytes);

}  // namespace lm
}  // namespace ctorch
