/* Shared by bench/module_cost.cpp and bench/module_cost_c.c. */
#ifndef CTORCH_BENCH_MODULE_COST_H
#define CTORCH_BENCH_MODULE_COST_H
#ifdef __cplusplus
extern "C" {
#endif
typedef struct mc_side mc_side;
mc_side *mc_functional_new(void); /* LeNet-5 step, one ctorch call per op */
mc_side *mc_module_new(void);     /* the same with ctorch_nn modules */
double mc_steps(mc_side *s, long n); /* runs n training steps: seconds per step */
void mc_free(mc_side *s);
#ifdef __cplusplus
}
#endif
#endif
