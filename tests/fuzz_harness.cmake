# ctorch_add_fuzz_harness(NAME [LIBS lib...] [DEFS def...]): one fuzz harness,
# fuzz/fuzz_NAME.cpp, wired the one way every harness is (the nine in
# tests/harden and those beside the code they test: tests/image,
# tests/safetensors, tests/fuzz_text):
#   replay_NAME           the harness compiled as a plain program
#                         (fuzz/replay_main.cpp), run by the ctest test
#                         harden_replay_NAME over the seed corpus
#                         fuzz/corpus/NAME and the saved reproducers in
#                         tests/harden/regressions/NAME (when there are any);
#   fuzz_NAME             the libFuzzer target, only with
#                         CTORCH_HARDEN_FUZZERS (scripts/fuzz's clang build),
#                         written to tests/harden/ of the build, where
#                         scripts/fuzz looks for fuzz_<name>.
option(CTORCH_HARDEN_FUZZERS "Build the libFuzzer harnesses (clang only)" OFF)

function(ctorch_add_fuzz_harness name)
  cmake_parse_arguments(H "" "" "LIBS;DEFS" ${ARGN})
  set(fuzz ${PROJECT_SOURCE_DIR}/fuzz)
  add_executable(replay_${name} ${fuzz}/fuzz_${name}.cpp ${fuzz}/replay_main.cpp)
  target_include_directories(replay_${name} PRIVATE ${fuzz})
  target_compile_definitions(replay_${name} PRIVATE ${H_DEFS})
  target_link_libraries(replay_${name} PRIVATE ctorch ${H_LIBS})
  set(inputs ${fuzz}/corpus/${name})
  if(EXISTS ${PROJECT_SOURCE_DIR}/tests/harden/regressions/${name})
    list(APPEND inputs ${PROJECT_SOURCE_DIR}/tests/harden/regressions/${name})
  endif()
  add_test(NAME harden_replay_${name} COMMAND replay_${name} ${inputs})
  set_tests_properties(harden_replay_${name} PROPERTIES
    ENVIRONMENT "CTORCH_SOURCE_DIR=${PROJECT_SOURCE_DIR};OMP_NUM_THREADS=1")

  if(CTORCH_HARDEN_FUZZERS)
    # new_throws.cpp: out-of-memory inputs become std::bad_alloc in the
    # process; no_backtrace.cpp: libtorch's per-error backtrace off (c10).
    add_executable(fuzz_${name} ${fuzz}/fuzz_${name}.cpp ${fuzz}/new_throws.cpp ${fuzz}/no_backtrace.cpp)
    target_include_directories(fuzz_${name} PRIVATE ${fuzz})
    target_compile_definitions(fuzz_${name} PRIVATE ${H_DEFS})
    target_compile_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
    # -rdynamic: libctorch.so's coverage counters register with libFuzzer's
    # hooks in this executable, not with the runtime's no-op defaults.
    target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer -rdynamic)
    target_link_libraries(fuzz_${name} PRIVATE ctorch c10 ${H_LIBS})
    set_target_properties(fuzz_${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/harden)
  endif()
endfunction()
