# Generates the operator surface at build time from the installed torch's
# native_functions.yaml. Included by the top CMakeLists.txt before
# add_library(ctorch); sets CTORCH_GENERATED_SOURCES / _INCLUDE_DIR /
# _HEADERS / _DATA.

# 2 measured best on this 2-core machine (fewer shards parse the ATen headers
# fewer times; two keep both cores busy). See docs/ops.md.
set(CTORCH_OPS_SHARDS 2 CACHE STRING "Number of C++ files the generated wrappers are split into")

# The yaml comes from the torch Python package of the same version as the
# libtorch (cmake/ctorch_torch.cmake found it); a bare libtorch zip has none,
# so then it must be given.
if(NOT CTORCH_NATIVE_FUNCTIONS_YAML)
  set(_ctorch_torchgen_dir "")
  set(_ctorch_rc 1)
  if(CTORCH_TORCH_PYTHON)
    execute_process(
      COMMAND ${CTORCH_TORCH_PYTHON} -c "import torchgen, os; print(os.path.dirname(torchgen.__file__))"
      OUTPUT_VARIABLE _ctorch_torchgen_dir OUTPUT_STRIP_TRAILING_WHITESPACE
      RESULT_VARIABLE _ctorch_rc)
  endif()
  if(NOT _ctorch_rc EQUAL 0 OR NOT EXISTS "${_ctorch_torchgen_dir}/packaged/ATen/native/native_functions.yaml")
    message(FATAL_ERROR "ctorch: cannot locate native_functions.yaml of torch ${CTORCH_TORCH_VERSION} "
      "(no Python with that torch, or it lacks torchgen). Set CTORCH_NATIVE_FUNCTIONS_YAML to the yaml "
      "of the same version (e.g. from its pip wheel: torchgen/packaged/ATen/native/native_functions.yaml).")
  endif()
  set(CTORCH_NATIVE_FUNCTIONS_YAML "${_ctorch_torchgen_dir}/packaged/ATen/native/native_functions.yaml"
    CACHE FILEPATH "native_functions.yaml the operator bindings are generated from")
endif()
message(STATUS "ctorch: generating operators from ${CTORCH_NATIVE_FUNCTIONS_YAML}")

# The per-operator headers of the libtorch we compile against: the generator
# checks every at::_ops struct it calls exists there.
set(_ctorch_ops_dir "")
foreach(d ${TORCH_INCLUDE_DIRS})
  if(EXISTS "${d}/ATen/ops/add_ops.h")
    set(_ctorch_ops_dir "${d}/ATen/ops")
    break()
  endif()
endforeach()
set(_ctorch_ops_arg "")
if(_ctorch_ops_dir)
  set(_ctorch_ops_arg --aten-ops-dir ${_ctorch_ops_dir})
endif()
set(_ctorch_torch_version "${CTORCH_TORCH_VERSION}")

set(CTORCH_GENERATED_INCLUDE_DIR ${CMAKE_BINARY_DIR}/generated)
set(_gen ${CTORCH_GENERATED_INCLUDE_DIR})
set(_ctorch_gen_dir ${CMAKE_CURRENT_LIST_DIR})
file(GLOB _ctorch_gen_py CONFIGURE_DEPENDS ${_ctorch_gen_dir}/generate.py ${_ctorch_gen_dir}/ctorch_gen/*.py)

set(_shards "")
math(EXPR _last "${CTORCH_OPS_SHARDS} - 1")
foreach(k RANGE ${_last})
  list(APPEND _shards ${_gen}/ctorch_ops_${k}.cpp)
endforeach()
set(CTORCH_GENERATED_NULL_TEST ${_gen}/test_ops_null.c)
# api.json and ctorch_abi.h are made by the same command (see api.cmake).
include(${CMAKE_CURRENT_LIST_DIR}/api.cmake)
set(CTORCH_GENERATED_SWEEP ${_gen}/sweep_ops.c)
# The by-name call's per-operator checks (shim/dispatch/boxed_rules.h).
list(APPEND _shards ${_gen}/ctorch_boxed.cpp)

add_custom_command(
  OUTPUT ${_gen}/ctorch_ops.h ${_shards} ${_gen}/ops.json ${_gen}/coverage.json ${CTORCH_GENERATED_NULL_TEST}
    ${CTORCH_API_OUTPUTS} ${CTORCH_GENERATED_SWEEP}
  COMMAND ${CTORCH_GEN_PYTHON} ${_ctorch_gen_dir}/generate.py
    --yaml ${CTORCH_NATIVE_FUNCTIONS_YAML} --out ${_gen} --shards ${CTORCH_OPS_SHARDS}
    --torch-version ${_ctorch_torch_version}
    --ctorch-header ${CMAKE_CURRENT_SOURCE_DIR}/include/ctorch.h ${_ctorch_ops_arg}
  ${CTORCH_API_COMMAND}
  COMMAND ${CMAKE_COMMAND} -E copy_if_different ${_gen}/ops.json ${_gen}/coverage.json ${CMAKE_BINARY_DIR}
  DEPENDS ${_ctorch_gen_py} ${CTORCH_NATIVE_FUNCTIONS_YAML} ${CMAKE_CURRENT_SOURCE_DIR}/include/ctorch.h
    ${CMAKE_CURRENT_SOURCE_DIR}/include/ctorch_python.h
    ${PROJECT_SOURCE_DIR}/shim/ops/guards.h ${PROJECT_SOURCE_DIR}/shim/ops/guards_sparse.h ${PROJECT_SOURCE_DIR}/shim/ops/guards_norm.h ${PROJECT_SOURCE_DIR}/shim/ops/guards_math.h ${_ctorch_gen_dir}/unsafe_ops.txt ${CTORCH_NN_SOURCES}
  COMMENT "Generating ATen operator bindings (bindings-gen)"
  VERBATIM)

# The one target that runs the generator. Every consumer (the library, and
# tests/gen's NULL test) depends on it instead of listing the outputs as its
# own sources: with Makefiles each target that lists a custom command's
# outputs runs that command itself, so two targets raced on the same
# temporary files, and shim sources (which include ctorch_ops.h through
# ctorch.h) could compile before the header existed. Ninja hid both.
add_custom_target(ctorch_generate DEPENDS ${_gen}/ctorch_ops.h ${_shards} ${_gen}/ops.json ${CTORCH_GENERATED_NULL_TEST}
  ${CTORCH_GENERATED_SWEEP})

# The code the shards call (support helpers, guards) is hand-written and lives
# with the library, in shim/ops/; the top-level CMakeLists compiles it.
set(CTORCH_GENERATED_SOURCES ${_gen}/ctorch_ops.h ${_shards})
set(CTORCH_GENERATED_HEADERS ${_gen}/ctorch_ops.h)
set(CTORCH_GENERATED_DATA ${_gen}/ops.json ${_gen}/coverage.json)
# The shards include ctorch_gen_support.h and guards.h from shim/ops/.
set_source_files_properties(${_shards} PROPERTIES INCLUDE_DIRECTORIES ${PROJECT_SOURCE_DIR}/shim/ops)
# Named-tensor (Dimname) helpers only where the schemas still have Dimname:
# 1.13 does, 2.15 has neither the schemas nor at::Dimname. (Without this a
# 2.x build on Debian would even find 1.13's Dimname.h in /usr/include.)
file(STRINGS ${CTORCH_NATIVE_FUNCTIONS_YAML} _ctorch_dimname REGEX "Dimname" LIMIT_COUNT 1)
if(_ctorch_dimname)
  set_property(SOURCE ${_shards} ${PROJECT_SOURCE_DIR}/shim/ops/ctorch_gen_support.cpp
    APPEND PROPERTY COMPILE_DEFINITIONS CTORCH_GEN_DIMNAME=1)
endif()
list(APPEND CTORCH_GENERATED_SOURCES ${_gen}/ctorch_abi.h)
list(APPEND CTORCH_GENERATED_DATA ${_gen}/api.json)
include(${CMAKE_CURRENT_LIST_DIR}/bindings.cmake)
