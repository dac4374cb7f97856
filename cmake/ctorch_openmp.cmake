# shim/infer/intra_op.cpp runs work on libtorch's intra-op threads through
# at::parallel_for, an inline template that is parallel only where it is
# compiled with OpenMP (intra_op.cpp says why). With libtorch's OpenMP
# backend (AT_PARALLEL_OPENMP in ATen/Config.h: PyPI's and Debian's) and
# GCC, that one file is compiled with -fopenmp and ctorch links the libgomp
# libtorch_cpu loads (PyPI's torch carries its own in torch/lib, Debian's
# uses the system's), so a single OpenMP runtime and thread team serve both.
# Not GCC (clang's OpenMP calls LLVM's libomp) or another backend: the file
# compiles without OpenMP and its loops run on the calling thread.
set(_ctorch_at_openmp OFF)
foreach(d ${TORCH_INCLUDE_DIRS})
  if(EXISTS "${d}/ATen/Config.h")
    file(STRINGS "${d}/ATen/Config.h" _l REGEX "#define AT_PARALLEL_OPENMP 1")
    if(_l)
      set(_ctorch_at_openmp ON)
    endif()
  endif()
endforeach()
if(_ctorch_at_openmp AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # libtorch_cpu's own directory first: a pip torch's bundled libgomp.
  set(_ctorch_torch_lib_dirs "")
  if(TORCH_INSTALL_PREFIX)
    list(APPEND _ctorch_torch_lib_dirs "${TORCH_INSTALL_PREFIX}/lib")
  endif()
  find_library(CTORCH_GOMP NAMES libgomp.so.1 HINTS ${_ctorch_torch_lib_dirs} NO_DEFAULT_PATH)
  find_library(CTORCH_GOMP NAMES libgomp.so.1 gomp)
endif()
if(_ctorch_at_openmp AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CTORCH_GOMP)
  set_property(SOURCE ${CMAKE_CURRENT_SOURCE_DIR}/shim/infer/intra_op.cpp APPEND PROPERTY COMPILE_OPTIONS -fopenmp)
  target_link_libraries(ctorch PRIVATE ${CTORCH_GOMP})
  message(STATUS "ctorch: at::parallel_for from ctorch runs on libtorch's OpenMP threads (${CTORCH_GOMP})")
else()
  message(STATUS "ctorch: at::parallel_for from ctorch runs on the calling thread (no GCC OpenMP against this libtorch)")
endif()
