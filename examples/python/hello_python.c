/*
 * The Python bridge in a few lines: start Python, call torch from C with a
 * ctorch tensor (no copy either way), and read a Python error's traceback.
 *   cc hello_python.c $(pkg-config --cflags --libs ctorch-python)
 */
#include <stdio.h>

#include "ctorch_python.h"

int main(void) {
  ctorch_py_object torch = NULL, fn = NULL, x_py = NULL, y_py = NULL, bad = NULL;
  ctorch_tensor x = NULL, y = NULL;
  double sum = 0;
  if (ctorch_py_start(NULL, NULL) != CTORCH_OK) {
    fprintf(stderr, "%s\n", ctorch_py_last_error());
    return 1;
  }
  ctorch_arange(&x, ctorch_scalar_int(5), NULL, NULL, NULL, NULL); /* 0..4 */
  if (ctorch_py_import(&torch, "torch") != CTORCH_OK || ctorch_py_getattr(&fn, torch, "cumsum") != CTORCH_OK ||
      ctorch_py_from_tensor(&x_py, x) != CTORCH_OK) {
    fprintf(stderr, "%s\n", ctorch_py_last_error());
    return 1;
  }
  {
    ctorch_py_object zero = NULL;
    ctorch_value z = NULL;
    ctorch_value_int(&z, 0);
    ctorch_py_from_value(&zero, z);
    ctorch_value_free(z);
    ctorch_py_object args[2] = {x_py, zero};
    if (ctorch_py_call(&y_py, fn, args, 2, NULL) != CTORCH_OK || ctorch_py_to_tensor(&y, y_py) != CTORCH_OK) {
      fprintf(stderr, "%s\n", ctorch_py_last_error());
      return 1;
    }
    ctorch_py_object_free(zero);
  }
  {
    ctorch_tensor s = NULL;
    ctorch_sum(&s, y, NULL);
    ctorch_tensor_item_double(&sum, s);
    ctorch_tensor_free(s);
  }
  printf("torch.cumsum(0..4) from C: sum %.0f\n", sum); /* 0+1+3+6+10 = 20 */
  if (ctorch_py_exec(&bad, "def f():\n    return 1 / 0\nf()\n", "bad") != CTORCH_OK)
    printf("a Python error comes back as a status:\n%s\n", ctorch_py_last_error());
  ctorch_py_object_free(torch);
  ctorch_py_object_free(fn);
  ctorch_py_object_free(x_py);
  ctorch_py_object_free(y_py);
  ctorch_tensor_free(x);
  ctorch_tensor_free(y);
  return sum == 20 ? 0 : 1;
}
