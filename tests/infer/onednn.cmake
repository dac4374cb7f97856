# The module optimiser's oneDNN ResNet (onednn_resnet.c): the optimised
# module against the module's own operators; which path ran follows
# CTORCH_HAVE_ONEDNN (cmake/ctorch_onednn.cmake).
add_executable(test_infer_onednn onednn_resnet.c)
target_link_libraries(test_infer_onednn PRIVATE ctorch PkgConfig::CHECK Threads::Threads m)
target_compile_options(test_infer_onednn PRIVATE -Wall -Wextra -Werror=incompatible-pointer-types -Werror=int-conversion)
if(CTORCH_HAVE_ONEDNN)
  target_compile_definitions(test_infer_onednn PRIVATE CTORCH_TEST_HAVE_ONEDNN)
  if(CTORCH_DNNL_VERSION VERSION_GREATER_EQUAL 3)  # the int8 plan (resnet.cpp); 2.x refuses it
    target_compile_definitions(test_infer_onednn PRIVATE CTORCH_TEST_ONEDNN_INT8)
  endif()
endif()
add_test(NAME test_infer_onednn COMMAND test_infer_onednn)
set_tests_properties(test_infer_onednn PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT "${CTORCH_TEST_ENV}")
