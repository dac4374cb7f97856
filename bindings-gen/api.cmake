# The API description (api.json) and the ABI hash header, generated after
# the operators (they read ops.json) and before libctorch is compiled (the
# library reports the hash: shim/api_identity.cpp includes ctorch_abi.h).
# Included at the end of generate.cmake; extends CTORCH_GENERATED_*.
file(GLOB _ctorch_api_py CONFIGURE_DEPENDS ${_ctorch_gen_dir}/generate_api.py ${_ctorch_gen_dir}/ctorch_gen/*.py)
add_custom_command(
  OUTPUT ${_gen}/api.json ${_gen}/ctorch_abi.h
  COMMAND ${CTORCH_TORCH_PYTHON} ${_ctorch_gen_dir}/generate_api.py
    --header ${CMAKE_CURRENT_SOURCE_DIR}/include/ctorch.h --ops ${_gen}/ops.json
    --yaml ${CTORCH_NATIVE_FUNCTIONS_YAML} --out ${_gen} --torch-version ${_ctorch_torch_version}
    --cc ${CMAKE_C_COMPILER} --include ${CMAKE_CURRENT_SOURCE_DIR}/include --include ${_gen}
  COMMAND ${CMAKE_COMMAND} -E copy_if_different ${_gen}/api.json ${CMAKE_BINARY_DIR}
  DEPENDS ${_ctorch_api_py} ${_gen}/ops.json ${_gen}/ctorch_ops.h ${CTORCH_NATIVE_FUNCTIONS_YAML}
    ${CMAKE_CURRENT_SOURCE_DIR}/include/ctorch.h
  COMMENT "Describing the C API (api.json)"
  VERBATIM)
add_custom_target(ctorch_api_json DEPENDS ${_gen}/api.json)
list(APPEND CTORCH_GENERATED_SOURCES ${_gen}/ctorch_abi.h)
list(APPEND CTORCH_GENERATED_DATA ${_gen}/api.json)
set(CTORCH_API_JSON ${_gen}/api.json)
include(${CMAKE_CURRENT_LIST_DIR}/bindings.cmake)
