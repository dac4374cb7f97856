# Language bindings generated from api.json at build time (see
# docs/bindings.md): build/bindings/{python,node,go}. Generation needs only
# Python; the Node and Go tests install/compile what they need themselves.
# Included at the end of api.cmake.
set(CTORCH_BINDINGS_DIR ${CMAKE_BINARY_DIR}/bindings)
file(GLOB _ctorch_bind_src CONFIGURE_DEPENDS
  ${_ctorch_gen_dir}/generate_bindings.py ${_ctorch_gen_dir}/ctorch_gen/emit_py.py
  ${_ctorch_gen_dir}/ctorch_gen/emit_node.py ${_ctorch_gen_dir}/ctorch_gen/emit_go.py
  ${_ctorch_gen_dir}/python/ctorch/*.py ${_ctorch_gen_dir}/python/*.md
  ${_ctorch_gen_dir}/node/*.js ${_ctorch_gen_dir}/node/*.json ${_ctorch_gen_dir}/node/*.md
  ${_ctorch_gen_dir}/go/*.go ${_ctorch_gen_dir}/go/go.mod ${_ctorch_gen_dir}/go/*.md ${_ctorch_gen_dir}/go/cmd/mlp/*.go)
# The packages fall back to this build's library when CTORCH_LIB is unset.
set(_ctorch_lib_path ${CMAKE_BINARY_DIR}/libctorch.so)
add_custom_command(
  OUTPUT ${CTORCH_BINDINGS_DIR}/python/ctorch/_ops.py
  COMMAND ${CTORCH_TORCH_PYTHON} ${_ctorch_gen_dir}/generate_bindings.py --api ${_gen}/api.json --lang python
    --out ${CTORCH_BINDINGS_DIR}/python --build-lib ${_ctorch_lib_path}
  # Byte-compiled now, so that importing it (tests run without writing bytecode) takes ~0.1 s, not ~2 s.
  COMMAND ${CTORCH_TORCH_PYTHON} -m compileall -q ${CTORCH_BINDINGS_DIR}/python/ctorch
  DEPENDS ${_gen}/api.json ${_ctorch_bind_src}
  COMMENT "Generating the Python binding (ctypes) from api.json"
  VERBATIM)
add_custom_command(
  OUTPUT ${CTORCH_BINDINGS_DIR}/node/ops.js
  COMMAND ${CTORCH_TORCH_PYTHON} ${_ctorch_gen_dir}/generate_bindings.py --api ${_gen}/api.json --lang node
    --out ${CTORCH_BINDINGS_DIR}/node --build-lib ${_ctorch_lib_path}
  DEPENDS ${_gen}/api.json ${_ctorch_bind_src}
  COMMENT "Generating the Node.js binding (koffi) from api.json"
  VERBATIM)
add_custom_command(
  OUTPUT ${CTORCH_BINDINGS_DIR}/go/ops_gen.go
  COMMAND ${CTORCH_TORCH_PYTHON} ${_ctorch_gen_dir}/generate_bindings.py --api ${_gen}/api.json --lang go
    --out ${CTORCH_BINDINGS_DIR}/go --build-lib ${_ctorch_lib_path} --include ${CMAKE_CURRENT_SOURCE_DIR}/include
  DEPENDS ${_gen}/api.json ${_ctorch_bind_src}
  COMMENT "Generating the Go binding (cgo) from api.json"
  VERBATIM)
add_custom_target(ctorch_bindings ALL DEPENDS ${CTORCH_BINDINGS_DIR}/python/ctorch/_ops.py
  ${CTORCH_BINDINGS_DIR}/node/ops.js ${CTORCH_BINDINGS_DIR}/go/ops_gen.go)
