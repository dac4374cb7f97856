# One project version, and the Debian packages (CPack's DEB generator).
#
# The version: project(ctorch VERSION ...) in CMakeLists.txt is the one
# source. It names the library file (libctorch.so.X.Y.Z), ctorch.pc, the
# CMake package version, the .deb versions, and api.json's ctorch_version,
# from which the generated bindings take theirs (Node's package.json, Python's
# __version__, Go's Version). include/ctorch.h repeats it in
# CTORCH_VERSION_MAJOR/MINOR/PATCH for C programs (and ctorch_version() returns
# it at run time): configuring fails here when the two disagree, so a version
# bump is one edit in each place, never a silent mismatch.
file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/include/ctorch.h _ctorch_hv REGEX "^#define CTORCH_VERSION_(MAJOR|MINOR|PATCH) ")
string(REGEX REPLACE "[^;]*MAJOR ([0-9]+).*MINOR ([0-9]+).*PATCH ([0-9]+).*" "\\1.\\2.\\3" _ctorch_hv "${_ctorch_hv}")
if(NOT _ctorch_hv STREQUAL PROJECT_VERSION)
  message(FATAL_ERROR "ctorch: include/ctorch.h says version ${_ctorch_hv}, CMakeLists.txt's project() says "
    "${PROJECT_VERSION}: change both (and CHANGELOG.md)")
endif()

# ---- Debian packages -----------------------------------------------------------
# scripts/package configures a build with CMAKE_INSTALL_PREFIX=/usr (so
# GNUInstallDirs gives the multiarch lib/<triplet>) and runs cpack -G DEB.
# One package per component, named as Debian policy names library packages
# after their SONAME (libctorch.so.0-torch1.13 -> libctorch0-torch1.13):
#   runtime         libctorch<SOVERSION>          the shared library
#   dev             libctorch-dev                 headers, namelink, ctorch.pc, CMake package, api.json, ops.json
#   python-runtime  libctorch-python<SOVERSION>   the Python bridge (where built)
#   python-dev      libctorch-python-dev          its header, namelink, ctorch-python.pc, ctorch::python
# (python-binding, the ctypes package under share/ctorch/python, is not packaged here.)
set(CTORCH_PACKAGE_MAINTAINER "ctorch maintainers <maintainers@users.noreply.a-seed-c6713671.example>"
  CACHE STRING "Maintainer field of the Debian packages")
set(CTORCH_PACKAGE_RELEASE 1 CACHE STRING "Debian revision of the packages (VERSION-RELEASE)")

set(_ctorch_deb_version "${PROJECT_VERSION}-${CTORCH_PACKAGE_RELEASE}")
set(_ctorch_pkg_runtime "libctorch${CTORCH_SOVERSION}")
set(_ctorch_pkg_dev "libctorch-dev")
set(_ctorch_pkg_python-runtime "libctorch-python${CTORCH_SOVERSION}")
set(_ctorch_pkg_python-dev "libctorch-python-dev")
set(_ctorch_components runtime dev)
if(CTORCH_HAVE_PYTHON_BRIDGE)
  list(APPEND _ctorch_components python-runtime python-dev)
endif()

# /usr/share/doc/<package>/: copyright (Debian's machine-readable format),
# changelog.Debian.gz and the upstream changelog.gz, written at configure time.
# EXCLUDE_FROM_ALL: only component installs (cpack) take them, not a plain
# cmake --install.
set(_ctorch_doc_src ${CMAKE_CURRENT_BINARY_DIR}/package-doc)
string(TIMESTAMP _ctorch_deb_date "%a, %d %b %Y %H:%M:%S +0000" UTC)  # honours SOURCE_DATE_EPOCH
# The licence is LICENSE's, written out in full in Debian's format as lintian
# asks: its copyright line, then its text with each line indented and each
# blank line a " ." line.
file(READ ${PROJECT_SOURCE_DIR}/LICENSE _ctorch_license)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/LICENSE)
string(REGEX MATCH "Copyright \\(c\\) ([^\n]*)" _ctorch_copyright "${_ctorch_license}")
set(_ctorch_copyright "${CMAKE_MATCH_1}")
string(REGEX REPLACE "^.*\n\n(Redistribution)" "\\1" _ctorch_license "${_ctorch_license}")
string(STRIP "${_ctorch_license}" _ctorch_license)
string(REPLACE "\n\n" "\n.\n" _ctorch_license "${_ctorch_license}")
string(REPLACE "\n" "\n " _ctorch_license "${_ctorch_license}")
file(WRITE ${_ctorch_doc_src}/copyright
  "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"
  "Upstream-Name: ctorch\n"
  "Upstream-Contact: ${CTORCH_PACKAGE_MAINTAINER}\n"
  "\n"
  "Files: *\n"
  "Copyright: ${_ctorch_copyright}\n"
  "License: BSD-3-Clause\n"
  " ${_ctorch_license}\n")
file(WRITE ${_ctorch_doc_src}/changelog.Debian
  "ctorch (${_ctorch_deb_version}) unstable; urgency=medium\n\n"
  "  * Packaged from ctorch ${PROJECT_VERSION} with CPack (scripts/package),\n"
  "    built against libtorch ${CTORCH_TORCH_VERSION}. What the version holds:\n"
  "    changelog.gz (the project's CHANGELOG.md).\n\n"
  " -- ${CTORCH_PACKAGE_MAINTAINER}  ${_ctorch_deb_date}\n")
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/CHANGELOG.md ${_ctorch_doc_src}/changelog COPYONLY)
find_program(CTORCH_GZIP gzip)
foreach(f changelog.Debian changelog)
  if(CTORCH_GZIP)
    # -n: no name or time stamp in the header (reproducible); -9: lintian asks for it.
    execute_process(COMMAND ${CTORCH_GZIP} -9nf ${_ctorch_doc_src}/${f})
  endif()
endforeach()
foreach(c IN LISTS _ctorch_components)
  set(_pkg ${_ctorch_pkg_${c}})
  install(FILES ${_ctorch_doc_src}/copyright ${_ctorch_doc_src}/changelog.Debian.gz ${_ctorch_doc_src}/changelog.gz
    DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${_pkg} COMPONENT ${c} EXCLUDE_FROM_ALL)
endforeach()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ctorch)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "ctorch")
set(CPACK_PACKAGE_CONTACT "${CTORCH_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_STRIP_FILES TRUE)  # lintian: unstripped-binary-or-object
set(CPACK_COMPONENTS_ALL ${_ctorch_components})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # name_version-release_arch.deb
set(CPACK_DEBIAN_PACKAGE_RELEASE ${CTORCH_PACKAGE_RELEASE})
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CTORCH_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SOURCE ctorch)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Dependencies from the ELF files (dpkg-shlibdeps: libtorch1.13, libstdc++6,
# ...), and a shlibs file for ours: the ABI only grows within a SONAME
# (docs/abi.md), so a program built against X needs >= X.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
# (The bridge needs libctorch, which no installed package has yet: found in
# this build folder at package time; its Depends is written below.)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_CURRENT_BINARY_DIR})
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
# The ldconfig trigger modern packages use (lintian: package-must-activate-ldconfig-trigger).
file(WRITE ${_ctorch_doc_src}/triggers "activate-noawait ldconfig\n")
# (CPack also writes postinst/postrm scripts that run ldconfig, which lintian
# warns about: maintscript-calls-ldconfig. Scripts of our own that do nothing
# only trade it for maintainer-script-empty; CPack's stay.)

# Debian's libtorch (the default, CTORCH_TORCH empty) calls BLAS through the
# libblas.so.3 alternative; without an optimised BLAS installed that is the
# reference netlib BLAS, 23-30x slower on a matmul
# (docs/inference-benchmarks.md, "The embedded default's BLAS"). The runtime
# package pulls OpenBLAS in, which switches the alternative (a PyPI torch
# brings its own MKL: nothing to add).
# The OpenMP build: libtorch's thread count then governs it (scripts/deps).
if(NOT CTORCH_TORCH)
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "libopenblas0-openmp | libopenblas0")
endif()
set(_ctorch_exact "(= ${_ctorch_deb_version})")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${_ctorch_pkg_runtime})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${_ctorch_doc_src}/triggers)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
  "C ABI over LibTorch (built for libtorch ${CTORCH_TORCH_VERSION_MAJOR}.${CTORCH_TORCH_VERSION_MINOR})
ctorch gives any language with a C foreign-function interface PyTorch's
tensors, every ATen operator, autograd, torch.nn modules, optimizers, data
loading and checkpoints that Python's torch.load reads. Every function
returns a status; no C++ exception crosses the boundary.
.
This package holds the shared library, built against libtorch
${CTORCH_TORCH_VERSION}.")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME ${_ctorch_pkg_dev})
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${_ctorch_pkg_runtime} ${_ctorch_exact}")
set(CPACK_DEBIAN_DEV_PACKAGE_SHLIBDEPS OFF)
set(CPACK_COMPONENT_DEV_DESCRIPTION
  "C ABI over LibTorch - development files
ctorch gives any language with a C foreign-function interface PyTorch's
tensors, every ATen operator, autograd, modules and optimizers.
.
This package holds the headers (ctorch.h and the generated operator
headers), the pkg-config file ctorch.pc, the CMake package
(find_package(ctorch)) and the API descriptions api.json and ops.json
that language bindings are generated from.")
set(CPACK_DEBIAN_PYTHON-RUNTIME_PACKAGE_NAME ${_ctorch_pkg_python-runtime})
set(CPACK_DEBIAN_PYTHON-RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PYTHON-RUNTIME_PACKAGE_CONTROL_EXTRA ${_ctorch_doc_src}/triggers)
# dpkg-shlibdeps cannot see libctorch (not installed yet): named here. The
# bridge embeds the Python whose torch is ctorch's libtorch.
set(CPACK_DEBIAN_PYTHON-RUNTIME_PACKAGE_DEPENDS "${_ctorch_pkg_runtime} ${_ctorch_exact}, python3-torch")
set(CPACK_COMPONENT_PYTHON-RUNTIME_DESCRIPTION
  "C ABI over LibTorch - Python bridge
ctorch's Python bridge (libctorch_python) embeds the Python interpreter
whose torch is ctorch's libtorch: C programs call Python functions and
PyTorch modules and exchange tensors without copies.")
set(CPACK_DEBIAN_PYTHON-DEV_PACKAGE_NAME ${_ctorch_pkg_python-dev})
set(CPACK_DEBIAN_PYTHON-DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PYTHON-DEV_PACKAGE_DEPENDS
  "${_ctorch_pkg_python-runtime} ${_ctorch_exact}, ${_ctorch_pkg_dev} ${_ctorch_exact}")
set(CPACK_DEBIAN_PYTHON-DEV_PACKAGE_SHLIBDEPS OFF)
set(CPACK_COMPONENT_PYTHON-DEV_DESCRIPTION
  "C ABI over LibTorch - Python bridge development files
The header ctorch_python.h, the pkg-config file ctorch-python.pc and the
CMake target ctorch::python of ctorch's Python bridge, which lets C
programs call Python and PyTorch and exchange tensors without copies.")
include(CPack)
