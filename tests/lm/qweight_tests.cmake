# The packed quantised matrices (shim/lm/qweight*, qkernels*): qweight_check
# compiles them with the GGUF reader (its dequantisation is the reference)
# and checks every format, row count and instruction set this CPU runs
# against float products (qweight_check.cpp says what). The library
# exports only the C API, so the test links the sources itself.
add_executable(qweight_check qweight_check.cpp
  ${PROJECT_SOURCE_DIR}/shim/lm/qweight.cpp ${PROJECT_SOURCE_DIR}/shim/lm/qkernels.cpp
  ${PROJECT_SOURCE_DIR}/shim/lm/qkernels_x86.cpp ${PROJECT_SOURCE_DIR}/shim/lm/qkernels_int8.cpp
  ${PROJECT_SOURCE_DIR}/shim/infer/intra_op.cpp)
target_link_libraries(qweight_check PRIVATE ctorch_gguf_reader)
target_compile_options(qweight_check PRIVATE -Wall -Wno-unused-parameter)
add_test(NAME lm_qweight COMMAND qweight_check)
set_tests_properties(lm_qweight PROPERTIES TIMEOUT 120 ENVIRONMENT "OMP_NUM_THREADS=1")
