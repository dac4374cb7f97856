# examples/chat.c (the chat docs/llm.md shows) on SmolLM2-135M-Instruct's GGUF:
# the answer, the end at the end-of-sequence id, the end by length.
if(CTORCH_BUILD_EXAMPLES)
  add_test(NAME lm_chat_example COMMAND ${PROJECT_SOURCE_DIR}/tests/run_if.sh --python "${_lm_ref}" --
    "${_lm_ref}" ${CMAKE_CURRENT_SOURCE_DIR}/chat_example.py $<TARGET_FILE:chat>)
  set_tests_properties(lm_chat_example PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
