# oneDNN's own API for the module optimiser's ResNet plan
# (shim/infer/onednn/): the oneDNN in the process already where libtorch
# links it shared (Debian's libtorch 1.13.1 links Debian's libdnnl.so.2:
# package libdnnl-dev gives its headers), else PyPI's oneDNN beside a PyPI
# torch (that torch links its own oneDNN statically and exports none of its
# symbols): package onednn-devel-cpu-gomp in the same venv, oneDNN 3.x on
# GNU OpenMP, whose libgomp.so.1 is the one torch/lib carries (one OpenMP
# runtime, one thread team). CTORCH_ONEDNN=OFF, or neither found: ctorch
# builds without it and the optimiser's onednn_resnet option reports itself
# skipped.
option(CTORCH_ONEDNN "Use oneDNN's own API for the optimiser's ResNet plan, where found" ON)
set(CTORCH_HAVE_ONEDNN OFF)
if(CTORCH_ONEDNN)
  get_filename_component(_ctorch_torch_root "${TORCH_INSTALL_PREFIX}" ABSOLUTE)
  if(_ctorch_torch_root MATCHES "/lib/python[0-9.]+/site-packages/torch$")
    # A venv's torch: the venv's oneDNN only (never the system's, a second
    # oneDNN built against the system's OpenMP).
    get_filename_component(_venv "${_ctorch_torch_root}/../../../.." ABSOLUTE)
    find_path(CTORCH_DNNL_INCLUDE oneapi/dnnl/dnnl.hpp HINTS "${_venv}/include" NO_DEFAULT_PATH)
    find_library(CTORCH_DNNL_LIBRARY NAMES libdnnl.so.3 HINTS "${_venv}/lib" NO_DEFAULT_PATH)
  else()
    # Only the oneDNN this libtorch links (its major version), so one copy runs.
    find_library(CTORCH_TORCH_CPU_LIBRARY NAMES torch_cpu HINTS "${_ctorch_torch_root}/lib")
    set(_needed "")
    if(CTORCH_TORCH_CPU_LIBRARY AND CMAKE_OBJDUMP)
      execute_process(COMMAND ${CMAKE_OBJDUMP} -p "${CTORCH_TORCH_CPU_LIBRARY}" OUTPUT_VARIABLE _needed ERROR_QUIET)
    endif()
    string(REGEX MATCH "NEEDED +libdnnl\\.so\\.[0-9]+" _dnnl_needed "${_needed}")
    if(_dnnl_needed)
      string(REGEX REPLACE "NEEDED +" "" _dnnl_soname "${_dnnl_needed}")
      find_path(CTORCH_DNNL_INCLUDE oneapi/dnnl/dnnl.hpp)
      find_library(CTORCH_DNNL_LIBRARY NAMES ${_dnnl_soname})
    endif()
  endif()
  if(CTORCH_DNNL_INCLUDE AND CTORCH_DNNL_LIBRARY)
    set(CTORCH_HAVE_ONEDNN ON)
    file(STRINGS "${CTORCH_DNNL_INCLUDE}/oneapi/dnnl/dnnl_version.h" _l REGEX "#define DNNL_VERSION_(MAJOR|MINOR) ")
    string(REGEX REPLACE "[^0-9;]" "" _v "${_l}")
    string(REPLACE ";" "." _v "${_v}")
    set(CTORCH_DNNL_VERSION "${_v}")  # MAJOR.MINOR, for the tests
    set(_dnnl_sources ${CMAKE_CURRENT_SOURCE_DIR}/shim/infer/onednn/resnet.cpp)
    target_sources(ctorch PRIVATE ${_dnnl_sources})
    if(NOT CTORCH_DNNL_INCLUDE IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES)  # -I/usr/include breaks #include_next
      set_property(SOURCE ${_dnnl_sources} APPEND PROPERTY INCLUDE_DIRECTORIES "${CTORCH_DNNL_INCLUDE}")
    endif()
    target_link_libraries(ctorch PRIVATE "${CTORCH_DNNL_LIBRARY}")
    message(STATUS "ctorch: the optimiser's ResNet plan runs oneDNN ${_v} (${CTORCH_DNNL_LIBRARY})")
  endif()
endif()
if(NOT CTORCH_HAVE_ONEDNN)
  target_sources(ctorch PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/shim/infer/onednn/absent.cpp)
  if(CTORCH_ONEDNN)
    message(STATUS "ctorch: no oneDNN matching this libtorch (libdnnl-dev for Debian's, onednn-devel-cpu-gomp in a "
      "PyPI torch's venv): the optimiser's onednn_resnet option is skipped")
  endif()
endif()
