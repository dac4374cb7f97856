# The CUDA-specific part of ctorch (shim/device/cuda_backend/, see shim/core/cuda_backend.h):
# with_cuda.cpp where the libtorch has CUDA (its CMake config defines the
# target torch_cuda: every Linux pip wheel, a CUDA libtorch zip), else
# without_cuda.cpp, whose functions return CTORCH_NOT_IMPLEMENTED. Either way
# libctorch links only `torch` (whose interface brings torch_cuda, c10_cuda
# and the CUDA runtime along) and exports the same symbols.
#
# NCCL: ProcessGroupNCCL's header includes <nccl.h>, which a pip wheel ships
# in the nvidia-nccl package beside the CUDA runtime. Where it is found the
# backend gets the NCCL process group; else ctorch_dist_nccl_available is 0.
#
# Sets CTORCH_WITH_CUDA (ON/OFF) and CTORCH_WITH_NCCL (ON/OFF).

set(CTORCH_WITH_CUDA OFF)
set(CTORCH_WITH_NCCL OFF)
# A pip wheel used without a CUDA toolkit (cmake/ctorch_torch.cmake sets
# CTORCH_CUDA_INCLUDE_DIR then) ships cuda_runtime_api.h but not the
# crt/host_defines.h it includes: that comes in the package nvidia-cuda-crt.
# Without it the backend cannot compile; build without it rather than fail.
set(_ctorch_cuda_headers_ok ON)
if(TARGET torch_cuda AND CTORCH_CUDA_INCLUDE_DIR AND NOT EXISTS "${CTORCH_CUDA_INCLUDE_DIR}/crt/host_defines.h")
  set(_ctorch_cuda_headers_ok OFF)
  message(WARNING "ctorch: ${CTORCH_CUDA_INCLUDE_DIR} lacks crt/host_defines.h: the CUDA backend (memory stats, "
    "device properties, CUDA graphs, NCCL) is left out and returns CTORCH_NOT_IMPLEMENTED. Install the headers "
    "into the torch environment: pip install nvidia-cuda-crt==<the version of nvidia-cuda-runtime>")
endif()
if(TARGET torch_cuda AND _ctorch_cuda_headers_ok)
  set(CTORCH_WITH_CUDA ON)
  set(_ctorch_cuda_src ${CMAKE_CURRENT_SOURCE_DIR}/shim/device/cuda_backend/with_cuda.cpp)
  # c10/cuda/CUDAEvent.h uses std::hardware_destructive_interference_size,
  # which GCC 12+ warns about in every includer.
  set_source_files_properties(${_ctorch_cuda_src} PROPERTIES COMPILE_OPTIONS "-Wno-interference-size")
  set(_hints "")
  if(CTORCH_CUDA_INCLUDE_DIR)  # the pip wheel's nvidia/cu*/include (cmake/ctorch_torch.cmake)
    list(APPEND _hints "${CTORCH_CUDA_INCLUDE_DIR}/../../nccl/include")
  endif()
  if(CUDAToolkit_INCLUDE_DIRS)
    list(APPEND _hints ${CUDAToolkit_INCLUDE_DIRS})
  endif()
  get_filename_component(_torch_site "${TORCH_INSTALL_PREFIX}/.." ABSOLUTE)
  list(APPEND _hints "${_torch_site}/nvidia/nccl/include")
  find_path(CTORCH_NCCL_INCLUDE_DIR nccl.h HINTS ${_hints})
  if(CTORCH_NCCL_INCLUDE_DIR)
    set(CTORCH_WITH_NCCL ON)
    set_source_files_properties(${_ctorch_cuda_src} PROPERTIES
      COMPILE_DEFINITIONS "USE_C10D_NCCL=1;CTORCH_WITH_NCCL=1"
      INCLUDE_DIRECTORIES "${CTORCH_NCCL_INCLUDE_DIR}")
  endif()
  message(STATUS "ctorch: libtorch has CUDA: GPU backend compiled (NCCL: ${CTORCH_WITH_NCCL})")
else()
  set(_ctorch_cuda_src ${CMAKE_CURRENT_SOURCE_DIR}/shim/device/cuda_backend/without_cuda.cpp)
  message(STATUS "ctorch: libtorch without CUDA: GPU calls will return CTORCH_NOT_IMPLEMENTED")
endif()
target_sources(ctorch PRIVATE ${_ctorch_cuda_src})
