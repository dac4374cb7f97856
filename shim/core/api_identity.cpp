// The C API's identity at run time: the ABI hash api.json also carries
// (computed by bindings-gen/generate_api.py into the generated ctorch_abi.h).
#include "internal.h"

#include "ctorch_abi.h"

extern "C" {

CTORCH_API ctorch_status ctorch_abi_hash(const char **out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = CTORCH_ABI_HASH;
  CTORCH_CATCH
}

}  // extern "C"
