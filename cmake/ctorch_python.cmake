# The Python bridge (libctorch_python.so, include/ctorch_python.h,
# shim/pybridge/): built when CTORCH_TORCH_PYTHON (the Python whose torch is
# the libtorch ctorch builds against) has its headers and a shared
# libpython to embed. Sets CTORCH_HAVE_PYTHON_BRIDGE.
option(CTORCH_BUILD_PYTHON_BRIDGE "Build libctorch_python where a matching Python is found" ON)
set(CTORCH_HAVE_PYTHON_BRIDGE OFF)
if(CTORCH_BUILD_PYTHON_BRIDGE AND CTORCH_TORCH_PYTHON)
  execute_process(
    COMMAND ${CTORCH_TORCH_PYTHON} -c
      "import sysconfig as s, os; i=s.get_paths()['include']; d=s.get_config_var('LIBDIR') or ''; l=s.get_config_var('LDLIBRARY') or ''; print(i); print(os.path.join(d, l) if s.get_config_var('Py_ENABLE_SHARED') else '')"
    OUTPUT_VARIABLE _ctorch_py_cfg OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _ctorch_py_rc)
  string(REPLACE "\n" ";" _ctorch_py_cfg "${_ctorch_py_cfg}")
  list(LENGTH _ctorch_py_cfg _ctorch_py_n)
  if(_ctorch_py_rc EQUAL 0 AND _ctorch_py_n EQUAL 2)
    list(GET _ctorch_py_cfg 0 CTORCH_PYTHON_INCLUDE)
    list(GET _ctorch_py_cfg 1 CTORCH_PYTHON_LIBRARY)
  endif()
  if(CTORCH_PYTHON_LIBRARY AND EXISTS "${CTORCH_PYTHON_LIBRARY}" AND EXISTS "${CTORCH_PYTHON_INCLUDE}/Python.h")
    set(CTORCH_HAVE_PYTHON_BRIDGE ON)
  else()
    message(STATUS "ctorch: no Python bridge (${CTORCH_TORCH_PYTHON} has no Python.h or shared libpython to embed)")
  endif()
endif()

if(CTORCH_HAVE_PYTHON_BRIDGE)
  message(STATUS "ctorch: Python bridge embeds ${CTORCH_PYTHON_LIBRARY} (default interpreter ${CTORCH_TORCH_PYTHON})")
  file(GLOB _ctorch_py_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/shim/pybridge/*.cpp)
  add_library(ctorch_python SHARED ${_ctorch_py_sources})
  set_target_properties(ctorch_python PROPERTIES
    VERSION ${PROJECT_VERSION}
    SOVERSION ${CTORCH_SOVERSION}
    EXPORT_NAME python  # find_package(ctorch): ctorch::python
    INSTALL_RPATH_USE_LINK_PATH TRUE
    LINK_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/shim/pybridge/ctorch_python.map)
  target_include_directories(ctorch_python PRIVATE ${CTORCH_PYTHON_INCLUDE})
  target_compile_definitions(ctorch_python PRIVATE CTORCH_PYTHON_DEFAULT="${CTORCH_TORCH_PYTHON}")
  target_link_libraries(ctorch_python PUBLIC ctorch PRIVATE ${CTORCH_PYTHON_LIBRARY} dlpack::dlpack ${CMAKE_DL_LIBS})
  target_link_options(ctorch_python PRIVATE
    -Wl,--version-script=${CMAKE_CURRENT_SOURCE_DIR}/shim/pybridge/ctorch_python.map -Wl,--no-undefined)
  target_compile_options(ctorch_python PRIVATE -Wall -Wno-unused-parameter -Wno-missing-field-initializers)
  add_library(ctorch::python ALIAS ctorch_python)
  # Its own export set and components (python-runtime, python-dev: the
  # Debian packages libctorch-python*), so that ctorch's CMake package works
  # without the bridge installed: ctorchConfig.cmake includes
  # ctorchPythonTargets.cmake where it is there.
  install(TARGETS ctorch_python EXPORT ctorchPythonTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT python-runtime NAMELINK_COMPONENT python-dev)
  install(EXPORT ctorchPythonTargets NAMESPACE ctorch:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ctorch
    COMPONENT python-dev)
  install(FILES include/ctorch_python.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT python-dev)
  configure_file(pkgconfig/ctorch-python.pc.in ${CMAKE_CURRENT_BINARY_DIR}/ctorch-python.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ctorch-python.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
    COMPONENT python-dev)
endif()
