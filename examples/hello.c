/* hello.c - the smallest useful ctorch program: make tensors, do
 * arithmetic, print, and see what a failure looks like.
 *   cc hello.c $(pkg-config --cflags --libs ctorch) -o hello */
#include <stdio.h>
#include <ctorch.h>

static int check(ctorch_status st, const char *what) {
  if (st != CTORCH_OK) fprintf(stderr, "%s failed: %s: %s\n", what, ctorch_status_name(st), ctorch_last_error());
  return st == CTORCH_OK;
}

static void print(const char *label, ctorch_tensor t) {
  char *s = NULL;
  if (check(ctorch_tensor_to_string(&s, t), "to_string")) printf("%s =\n%s\n", label, s);
  ctorch_string_free(s);
}

int main(void) {
  const float a_data[6] = {1, 2, 3, 4, 5, 6};
  const float b_data[6] = {10, 20, 30, 40, 50, 60};
  const int64_t shape[2] = {2, 3};
  const int64_t other_shape[1] = {4};
  const float c_data[4] = {1, 1, 1, 1};
  const char *version = NULL, *torch_version = NULL;
  ctorch_tensor a = NULL, b = NULL, c = NULL, sum = NULL, prod = NULL, bad = NULL;
  ctorch_status st;
  double total = 0;
  int ok = 1;

  ctorch_version(&version);
  ctorch_torch_version(&torch_version);
  printf("ctorch %s on libtorch %s\n", version, torch_version);

  ok &= check(ctorch_tensor_from_data(&a, a_data, sizeof a_data, shape, 2, CTORCH_FLOAT32), "a");
  ok &= check(ctorch_tensor_from_data(&b, b_data, sizeof b_data, shape, 2, CTORCH_FLOAT32), "b");
  ok &= check(ctorch_add_Tensor(&sum, a, b, ctorch_scalar_int(1)), "add");
  ok &= check(ctorch_mul_Tensor(&prod, sum, a), "mul");
  if (!ok) return 1;
  print("a + b", sum);
  print("(a + b) * a", prod);
  check(ctorch_tensor_item_double(&total, sum), "item (expected to fail: 6 elements)");

  /* A shape error: [2,3] + [4] cannot broadcast. */
  check(ctorch_tensor_from_data(&c, c_data, sizeof c_data, other_shape, 1, CTORCH_FLOAT32), "c");
  st = ctorch_add_Tensor(&bad, a, c, ctorch_scalar_int(1));
  printf("adding shapes [2,3] and [4]: status %s (%d)\nmessage: %s\n", ctorch_status_name(st), (int)st,
         ctorch_last_error());

  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
  ctorch_tensor_free(c);
  ctorch_tensor_free(sum);
  ctorch_tensor_free(prod);
  return st == CTORCH_RUNTIME && bad == NULL ? 0 : 1;
}
