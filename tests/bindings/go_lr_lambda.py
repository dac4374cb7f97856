"""PyTorch's LambdaLR and MultiplicativeLR sequences for the Go binding's
TestLambdaLRMatchesTorch (bindings-gen/go/callbacks_test.go), which compares
ctorch.NewLambdaLR and NewMultiplicativeLR (Go functions as the C library's
callbacks) with them bit for bit: the same float operations in the same
order. SGD over two parameter groups (lr 0.1 and 0.05), both groups' lrs
after the scheduler is made and after each of 10 steps, for the lambdas that
the Go test writes the same way.

usage: go_lr_lambda.py OUT_JSON
The ctest fixture binding_go_lr_lambda_torch; binding_go_test reads OUT_JSON
(CTORCH_GO_TORCH_LRS), so the comparison costs no Go build of its own."""
import json
import os
import sys

import torch


def lambda_a(e):
    return 1 / (e + 1)


def lambda_b(e):
    return 1 - 0.05 * e


def mult_a(e):
    return 0.5 if e % 3 == 0 else 0.95


def sequence(make):
    a = torch.nn.Parameter(torch.tensor([1.0]))
    b = torch.nn.Parameter(torch.tensor([2.0]))
    opt = torch.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.05}], lr=0.1)
    sched = make(opt)
    out = [[g["lr"] for g in opt.param_groups]]
    for _ in range(10):
        opt.step()
        sched.step()
        out.append([g["lr"] for g in opt.param_groups])
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    lr = torch.optim.lr_scheduler
    want = {
        "lambda": sequence(lambda o: lr.LambdaLR(o, lambda_a)),
        "lambda_per_group": sequence(lambda o: lr.LambdaLR(o, [lambda_a, lambda_b])),
        "multiplicative": sequence(lambda o: lr.MultiplicativeLR(o, mult_a)),
    }
    # PyTorch's own values, checked where they are known exactly, so that a
    # wrong file fails here rather than as a difference in Go.
    assert want["lambda"][3] == [0.1 / 4, 0.05 / 4] and want["multiplicative"][1] == [0.1 * 0.95, 0.05 * 0.95], want
    os.makedirs(os.path.dirname(os.path.abspath(sys.argv[1])), exist_ok=True)
    with open(sys.argv[1], "w") as fh:
        json.dump(want, fh)
    print(f"PyTorch {torch.__version__}'s lr sequences written to {sys.argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
