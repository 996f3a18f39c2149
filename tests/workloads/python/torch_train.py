"""A PyTorch training loop on the CPU (bench/b_python_real.sh): a small conv net and MLP
trained by SGD on one batch of random tensors (no data set, no weights), one thread, for
SECONDS. Each step is train_step: zero_grad, forward (Net.forward through nn.Module's
call), cross_entropy, backward (autograd's engine, in C++), the optimizer's step.

usage: torch_train.py SECONDS"""
import sys
import time

import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.mlp = nn.Sequential(
            nn.Flatten(), nn.Linear(16 * 7 * 7, 64), nn.ReLU(), nn.Linear(64, 10))

    def forward(self, x):
        return self.mlp(self.conv(x))


def train_step(model, opt, x, y):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()


def train(seconds):
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(64, 1, 28, 28)
    y = torch.randint(0, 10, (64,))
    end = time.monotonic() + seconds
    steps = 0
    while time.monotonic() < end:
        train_step(model, opt, x, y)
        steps += 1
    return steps


if __name__ == "__main__":
    print(train(float(sys.argv[1])))
