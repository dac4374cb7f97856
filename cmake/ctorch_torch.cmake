# Which libtorch ctorch is built against, and the Python that goes with it.
#
# One switch, CTORCH_TORCH:
#   (empty, the default)  the system's libtorch found by find_package(Torch):
#                         Debian's libtorch-dev 1.13.1 on Debian 12.
#   a Python interpreter  the torch installed for that Python (pip, a venv,
#                         conda): its torch.utils.cmake_prefix_path and its
#                         native_functions.yaml. e.g. .../venv/bin/python
#   a directory           a libtorch prefix: the unpacked libtorch zip, an
#                         install prefix, or a pip torch's package directory.
#
# Whatever the choice, CTORCH_TORCH_PYTHON ends up as the Python whose torch
# has the same version as the libtorch found (the generator, the Python tests
# and the benchmarks use it); it is never a fixed path. When no such Python
# exists (a bare libtorch zip), the Python tests report themselves skipped and
# CTORCH_NATIVE_FUNCTIONS_YAML must name the yaml of the same version.
#
# Sets: CTORCH_TORCH_PYTHON, CTORCH_TORCH_VERSION (x.y.z from the headers),
# CTORCH_TORCH_VERSION_MAJOR/_MINOR/_PATCH, CTORCH_GEN_PYTHON.

set(CTORCH_TORCH "" CACHE STRING
  "libtorch to build against: empty = the system's (Debian's 1.13.1), a Python interpreter whose torch to use, or a libtorch directory")

# Runs `python -c code`; sets out_var to stdout, empty on failure.
function(_ctorch_py out_var python code)
  execute_process(COMMAND ${python} -c "${code}" OUTPUT_VARIABLE _out ERROR_QUIET
    RESULT_VARIABLE _rc OUTPUT_STRIP_TRAILING_WHITESPACE TIMEOUT 600)
  if(NOT _rc EQUAL 0)
    set(_out "")
  endif()
  set(${out_var} "${_out}" PARENT_SCOPE)
endfunction()

set(_ctorch_py_version_code
  "import re, torch; print(re.match(r'(\\d+\\.\\d+\\.\\d+)', torch.__version__).group(1))")

set(_ctorch_chosen_python "")
if(CTORCH_TORCH)
  if(IS_DIRECTORY "${CTORCH_TORCH}")
    # A libtorch zip or prefix has share/cmake/Torch; a pip torch package dir too.
    list(PREPEND CMAKE_PREFIX_PATH "${CTORCH_TORCH}" "${CTORCH_TORCH}/share/cmake")
  elseif(EXISTS "${CTORCH_TORCH}")
    _ctorch_py(_prefix "${CTORCH_TORCH}" "import torch.utils; print(torch.utils.cmake_prefix_path)")
    if(NOT _prefix)
      message(FATAL_ERROR "ctorch: CTORCH_TORCH=${CTORCH_TORCH} is neither a directory nor a Python that can import torch")
    endif()
    list(PREPEND CMAKE_PREFIX_PATH "${_prefix}")
    set(_ctorch_chosen_python "${CTORCH_TORCH}")
  else()
    message(FATAL_ERROR "ctorch: CTORCH_TORCH=${CTORCH_TORCH} does not exist")
  endif()
endif()

# A CUDA build of libtorch (every pip wheel for Linux) asks CMake for the CUDA
# toolkit (nvcc) just to be found, and fails without one, although ctorch
# compiles no CUDA code and the wheel's nvidia-* packages carry the runtime
# and its headers. When no toolkit is there, define the one target its config
# needs (torch::cudart, public/cuda.cmake's include guard) from those packages.
# (libtorch 2.x wheels; seen with 2.15.0+cu132.)
foreach(_p ${CMAKE_PREFIX_PATH})
  get_filename_component(_pkg "${_p}/../.." ABSOLUTE)  # <torch>/share/cmake -> <torch>
  if(NOT TARGET torch::cudart AND EXISTS "${_pkg}/lib/libtorch_cuda.so")
    find_package(CUDAToolkit QUIET)
    if(NOT CUDAToolkit_FOUND)
      get_filename_component(_site "${_pkg}/.." ABSOLUTE)
      file(GLOB _cudart "${_site}/nvidia/*/lib/libcudart.so.*")
      file(GLOB _cudart_h "${_site}/nvidia/*/include/cuda_runtime_api.h")
      if(_cudart AND _cudart_h)
        list(GET _cudart 0 _cudart)
        list(GET _cudart_h 0 _cudart_h)
        get_filename_component(_cuda_inc "${_cudart_h}" DIRECTORY)
        add_library(torch::cudart SHARED IMPORTED)
        set_target_properties(torch::cudart PROPERTIES IMPORTED_LOCATION "${_cudart}"
          INTERFACE_INCLUDE_DIRECTORIES "${_cuda_inc}")
        set(CTORCH_CUDA_INCLUDE_DIR "${_cuda_inc}")
        message(STATUS "ctorch: CUDA build of libtorch without a CUDA toolkit: using ${_cudart}")
      endif()
      # The CUDA wheels of torch 2.4 (scripts/torch-matrix) also link
      # torch::nvtoolsext (NVTX), which their config expects the toolkit's
      # FindCUDA to define; ctorch makes no NVTX call: an empty target.
      if(NOT TARGET torch::nvtoolsext)
        add_library(torch::nvtoolsext INTERFACE IMPORTED)
      endif()
    endif()
  endif()
endforeach()

find_package(Torch REQUIRED)

# The version the headers were built with (Torch_VERSION from the CMake
# config is not always set, and Debian's 1.13.1 calls itself 1.13.0 there and
# in its headers: its version.txt said 1.13.0a0).
set(_ctorch_version_h "")
foreach(d ${TORCH_INCLUDE_DIRS})
  foreach(f torch/headeronly/version.h torch/csrc/api/include/torch/version.h)
    if(NOT _ctorch_version_h AND EXISTS "${d}/${f}")
      file(STRINGS "${d}/${f}" _lines REGEX "#define TORCH_VERSION_(MAJOR|MINOR|PATCH) ")
      if(_lines)
        set(_ctorch_version_h "${d}/${f}")
      endif()
    endif()
  endforeach()
endforeach()
if(NOT _ctorch_version_h)
  message(FATAL_ERROR "ctorch: cannot find torch/version.h under ${TORCH_INCLUDE_DIRS}")
endif()
foreach(part MAJOR MINOR PATCH)
  file(STRINGS "${_ctorch_version_h}" _l REGEX "#define TORCH_VERSION_${part} ")
  string(REGEX REPLACE ".*TORCH_VERSION_${part} +([0-9]+).*" "\\1" CTORCH_TORCH_VERSION_${part} "${_l}")
endforeach()
set(CTORCH_TORCH_VERSION
  "${CTORCH_TORCH_VERSION_MAJOR}.${CTORCH_TORCH_VERSION_MINOR}.${CTORCH_TORCH_VERSION_PATCH}")
if(CTORCH_TORCH_VERSION VERSION_LESS 1.13)
  message(FATAL_ERROR "ctorch: libtorch ${CTORCH_TORCH_VERSION} is older than the oldest supported (1.13)")
endif()

# The Python whose torch matches: the chosen one, else the first python3 on
# PATH (every directory of it, in order) or beside the libtorch (a venv's
# bin/) whose torch has the same major.minor.patch as the headers.
if(NOT CTORCH_TORCH_PYTHON)
  set(_candidates ${_ctorch_chosen_python})
  if(NOT _candidates)
    get_filename_component(_torch_root "${TORCH_INSTALL_PREFIX}" ABSOLUTE)
    if(_torch_root MATCHES "/lib/python[0-9.]+/site-packages/torch$")  # a venv's (or prefix's) own torch
      get_filename_component(_venv "${_torch_root}/../../../.." ABSOLUTE)
      list(APPEND _candidates "${_venv}/bin/python3")
    endif()
    string(REPLACE ":" ";" _path "$ENV{PATH}")
    foreach(d ${_path})
      list(APPEND _candidates "${d}/python3")
    endforeach()
  endif()
  foreach(py ${_candidates})
    if(EXISTS "${py}" AND NOT CTORCH_TORCH_PYTHON)
      _ctorch_py(_v "${py}" "${_ctorch_py_version_code}")
      if(_v STREQUAL CTORCH_TORCH_VERSION)
        set(CTORCH_TORCH_PYTHON "${py}" CACHE FILEPATH "Python whose torch matches the libtorch ctorch is built against")
      elseif(_v)
        message(STATUS "ctorch: ${py} has torch ${_v}, not ${CTORCH_TORCH_VERSION}: not used")
      endif()
    endif()
  endforeach()
endif()
if(CTORCH_TORCH_PYTHON)
  _ctorch_py(_v "${CTORCH_TORCH_PYTHON}" "${_ctorch_py_version_code}")
  if(NOT _v STREQUAL CTORCH_TORCH_VERSION)
    message(FATAL_ERROR "ctorch: CTORCH_TORCH_PYTHON=${CTORCH_TORCH_PYTHON} has torch '${_v}', "
      "but the libtorch found has headers of ${CTORCH_TORCH_VERSION}")
  endif()
  set(CTORCH_GEN_PYTHON "${CTORCH_TORCH_PYTHON}")
  message(STATUS "ctorch: libtorch ${CTORCH_TORCH_VERSION} (${TORCH_INSTALL_PREFIX}); Python ${CTORCH_TORCH_PYTHON}")
else()
  set(CTORCH_TORCH_PYTHON "" CACHE FILEPATH "Python whose torch matches the libtorch ctorch is built against")
  find_program(CTORCH_GEN_PYTHON NAMES python3 python REQUIRED)
  message(WARNING "ctorch: no Python with torch ${CTORCH_TORCH_VERSION} found: tests that need one will be "
    "skipped. Set CTORCH_TORCH_PYTHON to use one.")
endif()

# Where the real data lives (package dataset-fashion-mnist); tests and
# examples that need it skip, visibly, when it is absent.
set(CTORCH_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist" CACHE PATH
  "Fashion-MNIST IDX files (gzip), for the tests, examples and benchmarks that train on them")
