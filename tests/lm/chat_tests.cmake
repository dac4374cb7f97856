# Chat templates (shim/lm/chat_template*): lm_chat_render renders templates
# with the interpreter's own objects (the library exports only the C API);
# chat_vs_transformers.py renders the same templates, conversations and
# probes of every construct with transformers' apply_chat_template path and
# compares the texts, and checks the bounds and refusals. Without
# transformers in the build's Python the comparison reports itself skipped.
add_library(lm_chat_objs STATIC
  ${PROJECT_SOURCE_DIR}/shim/lm/chat_template.cpp
  ${PROJECT_SOURCE_DIR}/shim/lm/chat_template_lex.cpp
  ${PROJECT_SOURCE_DIR}/shim/lm/chat_template_parse.cpp
  ${PROJECT_SOURCE_DIR}/shim/lm/chat_template_eval.cpp
  ${PROJECT_SOURCE_DIR}/shim/lm/chat_template_values.cpp
  ${PROJECT_SOURCE_DIR}/shim/lm/chat_template_lib.cpp
  ${PROJECT_SOURCE_DIR}/shim/lm/chat_template_text.cpp
  ${PROJECT_SOURCE_DIR}/shim/json/json.cpp)
target_include_directories(lm_chat_objs PUBLIC ${PROJECT_SOURCE_DIR}/shim ${PROJECT_SOURCE_DIR}/include
  ${CTORCH_GENERATED_INCLUDE_DIR})
# ICU: the Unicode case mappings (upper, lower, title, capitalize).
target_link_libraries(lm_chat_objs PUBLIC torch PkgConfig::ICU_UC)
# (ctorch.h includes the generated ctorch_ops.h: generated first.)
add_dependencies(lm_chat_objs ctorch_generate)
add_executable(lm_chat_render chat_render.cpp)
target_link_libraries(lm_chat_render PRIVATE lm_chat_objs)
# Templates are text: the reference is transformers in the torch 2.15.0
# environment (scripts/torch-env) whatever libtorch this tree is built
# against, else the tree's own Python.
if(DEFINED ENV{CTORCH_CACHE})
  set(_chat_cache "$ENV{CTORCH_CACHE}")
elseif(DEFINED ENV{XDG_CACHE_HOME})
  set(_chat_cache "$ENV{XDG_CACHE_HOME}/ctorch")
else()
  set(_chat_cache "$ENV{HOME}/.cache/ctorch")
endif()
set(_chat_ref "${CTORCH_TORCH_PYTHON}")
if(EXISTS "${_chat_cache}/torch-2.15.0/bin/python")
  set(_chat_ref "${_chat_cache}/torch-2.15.0/bin/python")
endif()
add_test(NAME lm_chat_vs_transformers COMMAND ${PROJECT_SOURCE_DIR}/tests/run_if.sh --python "${_chat_ref}" --
  "${_chat_ref}" ${CMAKE_CURRENT_SOURCE_DIR}/chat_vs_transformers.py $<TARGET_FILE:lm_chat_render>)
set_tests_properties(lm_chat_vs_transformers PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")

# The fuzz harness (fuzz/fuzz_chat_template.cpp): the interpreter's objects
# linked in, as lm_chat_render has them.
ctorch_add_fuzz_harness(chat_template LIBS lm_chat_objs)
