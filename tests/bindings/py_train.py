"""Trains a 784-128-10 MLP on Fashion-MNIST through the generated Python
binding (ctorch's loader, autograd and Adam), one epoch, and checks the
test accuracy. Exit 77 (skipped) without the data set."""
import os
import sys
import time

import ctorch

if os.environ.get("CTORCH_BINDING_SKIP"):
    print(f"skipped: {os.environ['CTORCH_BINDING_SKIP']}")
    sys.exit(77)

DATA = os.environ.get("CTORCH_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")
MIN_ACCURACY = 0.80

if not os.path.exists(os.path.join(DATA, "train-images-idx3-ubyte.gz")):
    print(f"skipped: Fashion-MNIST not found in {DATA} (package dataset-fashion-mnist)")
    sys.exit(77)

ctorch.manual_seed(0)
ctorch.set_num_threads(int(os.environ.get("CTORCH_TEST_THREADS", "1")))
t0 = time.time()


def prepare(train):
    images, labels = ctorch.data.read_mnist(DATA, train)
    x = images.to(ctorch.float32).reshape([-1, 784]) / 255.0
    return (x - 0.2860) / 0.3530, labels


x_train, y_train = prepare(True)
x_test, y_test = prepare(False)


def param(*shape, fan_in):
    t = ctorch.empty(list(shape))
    bound = 1.0 / fan_in ** 0.5
    ctorch.nn.init.uniform_(t, -bound, bound)
    return t.requires_grad_()


w1, b1 = param(128, 784, fan_in=784), param(128, fan_in=784)
w2, b2 = param(10, 128, fan_in=128), param(10, fan_in=128)
params = [w1, b1, w2, b2]


def model(x):
    return ctorch.nn.linear(ctorch.nn.linear(x, w1, b1).relu(), w2, b2)


opt = ctorch.optim.Adam(params, lr=1e-3)
loader = ctorch.data.DataLoader(x_train, y_train, batch_size=64, shuffle=True, seed=1)
steps = 0
for xb, yb in loader:
    loss = ctorch.nn.cross_entropy_loss(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    steps += 1
train_s = time.time() - t0

with ctorch.no_grad():
    pred = model(x_test).argmax(dim=1)
    accuracy = (pred == y_test).to(ctorch.float32).mean().item()
print(f"python binding: MLP 784-128-10, 1 epoch ({steps} steps of 64) in {train_s:.1f} s, "
      f"final loss {loss.item():.4f}, test accuracy {accuracy * 100:.2f}%")
if accuracy < MIN_ACCURACY:
    print(f"FAIL: accuracy below {MIN_ACCURACY * 100:.0f}%")
    sys.exit(1)
