# The decoders and sessions (shim/lm/model*, session*) against transformers.
#   lm_matches_transformers  lm_vs_transformers.py: small random-weight models
#                            of every architecture (make_models.py) loaded by
#                            lm_check (the C API): float32 logits and greedy
#                            ids equal to transformers', batched decode equal
#                            to one sequence at a time, fork and rewind, the
#                            refusals past the context and of hostile configs.
# The reference is transformers in the torch 2.15.0 environment
# (scripts/torch-env), whatever libtorch this tree is built against: the
# model files are data, the same for both. Where that environment is
# missing, the tree's own Python (skipped if it has no transformers).
add_executable(lm_check lm_check.c)
target_link_libraries(lm_check PRIVATE ctorch m)
target_compile_options(lm_check PRIVATE -Wall -Wextra)

if(DEFINED ENV{CTORCH_CACHE})
  set(_lm_cache "$ENV{CTORCH_CACHE}")
elseif(DEFINED ENV{XDG_CACHE_HOME})
  set(_lm_cache "$ENV{XDG_CACHE_HOME}/ctorch")
else()
  set(_lm_cache "$ENV{HOME}/.cache/ctorch")
endif()
set(CTORCH_LM_REFERENCE_PYTHON "" CACHE FILEPATH "The Python whose transformers the lm tests compare with")
set(_lm_ref "${CTORCH_LM_REFERENCE_PYTHON}")
if(NOT _lm_ref AND EXISTS "${_lm_cache}/torch-2.15.0/bin/python")
  set(_lm_ref "${_lm_cache}/torch-2.15.0/bin/python")
endif()
if(NOT _lm_ref)
  set(_lm_ref "${CTORCH_TORCH_PYTHON}")
endif()
add_test(NAME lm_matches_transformers COMMAND ${PROJECT_SOURCE_DIR}/tests/run_if.sh --python "${_lm_ref}" --
  "${_lm_ref}" ${CMAKE_CURRENT_SOURCE_DIR}/lm_vs_transformers.py --check $<TARGET_FILE:lm_check>)
set_tests_properties(lm_matches_transformers PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
  ENVIRONMENT "OMP_NUM_THREADS=1")
# The same on GGUF files of the models (written with PyPI's gguf package;
# skipped without it): quantised, half and float matrices, llama.cpp's q/k
# row order and rope_freqs.
add_test(NAME lm_gguf_matches_transformers COMMAND ${PROJECT_SOURCE_DIR}/tests/run_if.sh --python "${_lm_ref}" --
  "${_lm_ref}" ${CMAKE_CURRENT_SOURCE_DIR}/lm_gguf_vs_transformers.py --check $<TARGET_FILE:lm_check>)
set_tests_properties(lm_gguf_matches_transformers PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
  ENVIRONMENT "OMP_NUM_THREADS=1")
# A real model: SmolLM2-135M-Instruct's Q4_1 GGUF against transformers' GGUF
# loader (skipped without the file, gguf or accelerate).
add_test(NAME lm_smollm2_matches_transformers COMMAND ${PROJECT_SOURCE_DIR}/tests/run_if.sh --python "${_lm_ref}" --
  "${_lm_ref}" ${CMAKE_CURRENT_SOURCE_DIR}/lm_smollm2_vs_transformers.py --check $<TARGET_FILE:lm_check>)
set_tests_properties(lm_smollm2_matches_transformers PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
  ENVIRONMENT "OMP_NUM_THREADS=1")
