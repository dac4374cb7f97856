# The sampler chain (shim/lm/sampler*): sampler_vs_transformers.py drives
# ctorch_lm_sampler_* through ctypes and compares each processor with
# transformers' (bit for bit), the penalties with the OpenAI formula, the
# seeded draw with torch.multinomial, and checks the refusals.
ctorch_add_test(lm_sampler_vs_transformers NEEDS_PYTHON
  COMMAND ${CTORCH_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/sampler_vs_transformers.py)
set_tests_properties(lm_sampler_vs_transformers PROPERTIES ENVIRONMENT
  "CTORCH_LIB=$<TARGET_FILE:ctorch>;PYTHONDONTWRITEBYTECODE=1;OMP_NUM_THREADS=1")
