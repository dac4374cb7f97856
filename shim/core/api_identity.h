// The library's identity at run time (api_identity.cpp): its ABI hash, and
// whether the libtorch loaded in this process is the one it was built for.
#pragma once

namespace ctorch {

// Throws CTORCH_RUNTIME, naming both libtorch versions, when the libtorch
// this process loaded is not the release (major.minor) libctorch was
// compiled against. The identity queries (ctorch_version,
// ctorch_torch_version, ctorch_abi_hash) call it: every binding asks them
// first, so a mismatched pair is refused when a binding loads.
void require_matching_torch();

}  // namespace ctorch
