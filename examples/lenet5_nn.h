/*
 * LeNet-5 as torch.nn modules: the network of lenet5.c and ddp_lenet5.c
 * (lenet5_model.h keeps the same network written functionally, for the
 * benchmarks). Header-only; include after example_nn.h.
 *
 * lenet5.py's LeNet5 has conv1, conv2, fc1, fc2, fc3, made in that order
 * (the order of the random draws), and calls relu/max_pool/flatten in its
 * forward; here those are parameterless layers between them in a named
 * Sequential, so the state-dict keys are the same ("conv1.weight", ...,
 * "fc3.bias") and each program loads the other's weights strictly.
 */
#ifndef CTORCH_LENET5_NN_H
#define CTORCH_LENET5_NN_H

#include "example_nn.h"

static const nn_layer LENET5[] = {
    {"conv1", "Conv2d", "1, 6, 5"},  {"relu1", "ReLU", ""},         {"pool1", "MaxPool2d", "2"},
    {"conv2", "Conv2d", "6, 16, 5"}, {"relu2", "ReLU", ""},         {"pool2", "MaxPool2d", "2"},
    {"flatten", "Flatten", ""},      {"fc1", "Linear", "256, 120"}, {"relu3", "ReLU", ""},
    {"fc2", "Linear", "120, 84"},    {"relu4", "ReLU", ""},         {"fc3", "Linear", "84, 10"},
};

/* NEW LeNet-5, initialised from the default generator (seed it first). */
static inline ctorch_nn_module make_lenet5(void) { return nn_sequential(LENET5, sizeof LENET5 / sizeof LENET5[0]); }

#endif
