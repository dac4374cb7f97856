# What the Python wheel holds (pyproject.toml; scikit-build-core installs the
# `wheel` component into the wheel's site-packages root):
#   ctorch/                    the generated Python binding (ctypes)
#   ctorch/_installed.py       LIB = "lib/<SONAME>", BUNDLED = True: the binding
#                              loads the library beside it before $CTORCH_LIB
#   ctorch/lib/libctorch.so.0-torchX.Y   the library, one file named by its SONAME
# Included by CMakeLists.txt only when scikit-build-core runs CMake (SKBUILD),
# which also sets CTORCH_TORCH to the building Python, so the library is built
# against that Python's torch (the wheel then requires torch==X.Y.*:
# cmake/ctorch_wheel_meta.py).
#
# Finding libtorch: the library's RUNPATH is $ORIGIN/../../torch/lib, the
# torch package in the same site-packages (where pip puts both), so it loads
# without importing torch, and a C program that dlopens it finds libtorch too.
# Where torch sits in another folder of sys.path (a venv over system
# site-packages, --user, PYTHONPATH) the binding loads torch's libtorch.so
# from there first (_rt.py), which is what `import torch` before an extension
# does for torchvision; the loader then matches libctorch's needs by SONAME.
# No absolute path of the build machine's torch goes into the wheel.
set(_ctorch_wheel_soname "libctorch.so.${CTORCH_SOVERSION}")
set_target_properties(ctorch PROPERTIES
  INSTALL_RPATH "$ORIGIN/../../torch/lib"
  INSTALL_RPATH_USE_LINK_PATH OFF
  BUILD_WITH_INSTALL_RPATH ON)

# The binding, generated again without the build-tree fallback that
# bindings.cmake's copy has (its _capi.BUILD_LIB names this build folder).
set(_ctorch_wheel_py ${CMAKE_BINARY_DIR}/bindings-wheel/python)
add_custom_target(ctorch_wheel_python ALL
  COMMAND ${CTORCH_GEN_PYTHON} ${PROJECT_SOURCE_DIR}/bindings-gen/generate_bindings.py
    --api ${CTORCH_GENERATED_INCLUDE_DIR}/api.json --lang python --out ${_ctorch_wheel_py}
  COMMENT "Generating the wheel's Python binding from api.json"
  VERBATIM)
add_dependencies(ctorch_wheel_python ctorch_generate)
string(REGEX REPLACE "^([0-9]+\\.[0-9]+).*" "\\1" _ctorch_wheel_torch "${CTORCH_TORCH_VERSION}")
file(WRITE ${CMAKE_BINARY_DIR}/bindings-wheel/_installed.py
  "# Written by cmake/ctorch_wheel.cmake: this package is a wheel that carries its library.\n"
  "LIB = \"lib/${_ctorch_wheel_soname}\"  # relative to this package\n"
  "BUNDLED = True  # loaded before $CTORCH_LIB\n"
  "TORCH = \"${_ctorch_wheel_torch}\"  # the torch release it was built against (torch==${_ctorch_wheel_torch}.*)\n")
install(DIRECTORY ${_ctorch_wheel_py}/ctorch/ DESTINATION ctorch COMPONENT wheel
  PATTERN "__pycache__" EXCLUDE PATTERN "*.tmp" EXCLUDE)
install(FILES ${CMAKE_BINARY_DIR}/bindings-wheel/_installed.py DESTINATION ctorch COMPONENT wheel)
# One file under the SONAME (a wheel cannot hold symbolic links: the
# versioned file and its links would be three copies).
install(PROGRAMS $<TARGET_FILE:ctorch> DESTINATION ctorch/lib RENAME ${_ctorch_wheel_soname} COMPONENT wheel)
