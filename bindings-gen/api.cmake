# The API description (api.json) and the ABI hash header (ctorch_abi.h):
# made by the operator generator's command in generate.cmake, right after
# generate.py (it reads ops.json), so that one target runs it once before
# libctorch compiles (shim/core/api_identity.cpp includes ctorch_abi.h). The
# layout program is compiled with the build's C compiler.
set(CTORCH_API_JSON ${_gen}/api.json)
set(CTORCH_API_OUTPUTS ${_gen}/api.json ${_gen}/ctorch_abi.h)
set(CTORCH_API_COMMAND
  COMMAND ${CTORCH_GEN_PYTHON} ${_ctorch_gen_dir}/generate_api.py
    --header ${CMAKE_CURRENT_SOURCE_DIR}/include/ctorch.h --ops ${_gen}/ops.json
    --yaml ${CTORCH_NATIVE_FUNCTIONS_YAML} --out ${_gen} --torch-version ${_ctorch_torch_version}
    --soname libctorch.so.${CTORCH_SOVERSION} --lib-file libctorch.so.${PROJECT_VERSION}
    --cc ${CMAKE_C_COMPILER} --include ${CMAKE_CURRENT_SOURCE_DIR}/include --include ${_gen}
    --nn-dir ${CMAKE_CURRENT_SOURCE_DIR}/shim/nn
    --bridge-header ${CMAKE_CURRENT_SOURCE_DIR}/include/ctorch_python.h
    --version-script ${CMAKE_CURRENT_SOURCE_DIR}/shim/ctorch.map
    --bridge-version-script ${CMAKE_CURRENT_SOURCE_DIR}/shim/pybridge/ctorch_python.map
  COMMAND ${CMAKE_COMMAND} -E copy_if_different ${_gen}/api.json ${CMAKE_BINARY_DIR})
# (the version scripts too: their node is api.json's library.symbol_version)
list(APPEND _ctorch_gen_py ${_ctorch_gen_dir}/generate_api.py
  ${CMAKE_CURRENT_SOURCE_DIR}/shim/ctorch.map ${CMAKE_CURRENT_SOURCE_DIR}/shim/pybridge/ctorch_python.map)
# api.json's nn_modules are read from the module kinds' sources, so the
# command reruns when they change (its outputs are rewritten only if changed).
file(GLOB CTORCH_NN_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/shim/nn/*.cpp)
