"""Trains LeNet-5 (examples/lenet5.py's model, written with the binding's
module classes: a ctorch.nn.Module subclass holding Conv2d and Linear
children) on Fashion-MNIST, 2 epochs of AdamW at batch 256, and checks the
test accuracy and that the state-dict keys are Python's. Exit 77 (skipped)
without the data set. CTORCH_TRAIN_STEPS=N stops after N steps, and then
the loss must also have fallen (tests/package/run_wheel.sh: 30 steps, with
CTORCH_TRAIN_MIN_ACCURACY=0.3, in a fresh venv with the wheel installed)."""
import os
import sys
import time

import ctorch
from ctorch import nn

if os.environ.get("CTORCH_BINDING_SKIP"):
    print(f"skipped: {os.environ['CTORCH_BINDING_SKIP']}")
    sys.exit(77)

DATA = os.environ.get("CTORCH_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")
MIN_ACCURACY = float(os.environ.get("CTORCH_TRAIN_MIN_ACCURACY", "0.80"))
EPOCHS = 2
MAX_STEPS = int(os.environ.get("CTORCH_TRAIN_STEPS", "0"))  # 0: all EPOCHS

if not os.path.exists(os.path.join(DATA, "train-images-idx3-ubyte.gz")):
    print(f"skipped: Fashion-MNIST not found in {DATA} (package dataset-fashion-mnist)")
    sys.exit(77)

ctorch.manual_seed(0)
ctorch.set_num_threads(int(os.environ.get("CTORCH_TEST_THREADS", "1")))
t0 = time.time()


def prepare(train):
    images, labels = ctorch.data.read_mnist(DATA, train)
    x = images.to(ctorch.float32).reshape([-1, 1, 28, 28]) / 255.0
    return (x - 0.2860) / 0.3530, labels


x_train, y_train = prepare(True)
x_test, y_test = prepare(False)


class LeNet5(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(256, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = ctorch.max_pool2d(self.conv1(x).relu(), 2)
        x = ctorch.max_pool2d(self.conv2(x).relu(), 2)
        x = ctorch.flatten(x, 1)
        x = self.fc1(x).relu()
        x = self.fc2(x).relu()
        return self.fc3(x)


model = LeNet5()
keys = list(model.state_dict())
want = [f"{m}.{p}" for m in ("conv1", "conv2", "fc1", "fc2", "fc3") for p in ("weight", "bias")]
if keys != want or model.num_parameters() != 44426:
    print(f"FAIL: state_dict keys {keys} ({model.num_parameters()} parameters); Python's are {want} (44426)")
    sys.exit(1)

opt = ctorch.optim.AdamW(model.parameters(), lr=2e-3)
loader = ctorch.data.DataLoader(x_train, y_train, batch_size=256, shuffle=True, seed=1)
steps = 0
first_loss = None
for _ in range(EPOCHS):
    for xb, yb in loader:
        loss = ctorch.nn.cross_entropy_loss(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps += 1
        if first_loss is None:
            first_loss = loss.item()
        if steps == MAX_STEPS:
            break
    if steps == MAX_STEPS:
        break
train_s = time.time() - t0

model.eval()
with ctorch.no_grad():
    pred = model(x_test).argmax(dim=1)
    accuracy = (pred == y_test).to(ctorch.float32).mean().item()
print(f"python binding ({ctorch._rt.LIB_PATH}): LeNet-5 (ctorch.nn modules), {steps} steps of 256 in {train_s:.1f} s, "
      f"loss {first_loss:.4f} -> {loss.item():.4f}, test accuracy {accuracy * 100:.2f}%")
if MAX_STEPS and not loss.item() < first_loss:
    print("FAIL: the loss did not fall")
    sys.exit(1)
if accuracy < MIN_ACCURACY:
    print(f"FAIL: accuracy below {MIN_ACCURACY * 100:.0f}%")
    sys.exit(1)
