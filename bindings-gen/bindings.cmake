# Language bindings generated from api.json at build time (see
# docs/api-json.md): build/bindings/{python,node,go,rust,java}. Generation needs only
# Python; the Node and Go tests install or compile what they need themselves.
# A target without outputs, run on every build after ctorch_generate (files
# are rewritten only when they change, ~1 s each): listing api.json as a
# file dependency would make Makefile generators run the operator generator
# a second time from this target.
set(CTORCH_BINDINGS_DIR ${CMAKE_BINARY_DIR}/bindings)
# The packages fall back to this build's library when CTORCH_LIB is unset.
set(_ctorch_lib_path ${CMAKE_BINARY_DIR}/libctorch.so)
set(_ctorch_bind ${CTORCH_GEN_PYTHON} ${_ctorch_gen_dir}/generate_bindings.py --api ${_gen}/api.json
  --build-lib ${_ctorch_lib_path})
add_custom_target(ctorch_bindings ALL
  COMMAND ${_ctorch_bind} --lang python --out ${CTORCH_BINDINGS_DIR}/python
  # Byte-compiled now: importing it then takes ~0.1 s, not ~2 s (tests run without writing bytecode).
  COMMAND ${CTORCH_GEN_PYTHON} -m compileall -q ${CTORCH_BINDINGS_DIR}/python/ctorch
  COMMAND ${_ctorch_bind} --lang node --out ${CTORCH_BINDINGS_DIR}/node
  COMMAND ${_ctorch_bind} --lang go --out ${CTORCH_BINDINGS_DIR}/go --include ${CMAKE_CURRENT_SOURCE_DIR}/include
  COMMAND ${_ctorch_bind} --lang rust --out ${CTORCH_BINDINGS_DIR}/rust
  COMMAND ${_ctorch_bind} --lang java --out ${CTORCH_BINDINGS_DIR}/java
  COMMENT "Generating the Python, Node.js, Go, Rust and Java bindings from api.json"
  VERBATIM)
add_dependencies(ctorch_bindings ctorch_generate)

# Installed: the Python package (the only module called ctorch; the former
# python/ctorch.py is its interop module) under share/ctorch/python, with
# pyproject.toml (pip install <prefix>/share/ctorch/python also works).
# _installed.py tells the package where the installed library is, relative
# to itself, so it loads that one rather than the build tree's.
set(_ctorch_py_dest ${CMAKE_INSTALL_DATADIR}/ctorch/python)
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(_ctorch_py_lib "${CMAKE_INSTALL_LIBDIR}/libctorch.so")
else()
  file(RELATIVE_PATH _ctorch_py_lib "/r/${_ctorch_py_dest}/ctorch" "/r/${CMAKE_INSTALL_LIBDIR}/libctorch.so")
endif()
file(WRITE ${CMAKE_BINARY_DIR}/bindings-install/_installed.py
  "# Written by CMake's install (bindings-gen/bindings.cmake): the library, relative to this package.\n"
  "LIB = \"${_ctorch_py_lib}\"\n")
# (__pycache__ too: importing then takes ~0.1 s, not ~2 s; not what a pip
# build of the package left beside it.)
install(DIRECTORY ${CTORCH_BINDINGS_DIR}/python/ DESTINATION ${_ctorch_py_dest} COMPONENT python-binding
  PATTERN "*.tmp" EXCLUDE PATTERN "build" EXCLUDE PATTERN "*.egg-info" EXCLUDE)
install(FILES ${CMAKE_BINARY_DIR}/bindings-install/_installed.py DESTINATION ${_ctorch_py_dest}/ctorch
  COMPONENT python-binding)
