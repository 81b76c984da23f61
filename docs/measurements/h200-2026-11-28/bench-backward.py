import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class Louder(torch.autograd.Function):
    """The identity, forward and backward, through a gradient float16 cannot hold (past 65504)."""

    @staticmethod
    def forward(ctx, x):
        """The identity."""
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        """The gradient, through a value float16 cannot hold."""
        return grad * 1e6 / 1e6


def make_step(policy, loss_scaling=True):
    """A step whose float16 backward pass overflows (GradScaler skips every step)."""
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)).to(DEVICE)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs, targets = torch.randn(64, 32, device=DEVICE), torch.randn(64, 1, device=DEVICE)
    dtype = {"mixed_bfloat16": torch.bfloat16, "mixed_float16": torch.float16}.get(policy)
    scaler = torch.amp.GradScaler(DEVICE, enabled=dtype is torch.float16 and loss_scaling)

    def step():
        optimizer.zero_grad()
        with torch.autocast(DEVICE, dtype=dtype or torch.float32, enabled=dtype is not None):
            hidden = Louder.apply(model[0](inputs))
            loss = torch.nn.functional.mse_loss(model[2](model[1](hidden)).float(), targets)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return loss.detach()

    return step
