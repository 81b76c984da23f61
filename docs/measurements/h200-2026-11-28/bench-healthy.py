import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def make_step(policy, loss_scaling=True):
    """A healthy step: no numerics finding in any precision."""
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)).to(DEVICE)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs, targets = torch.randn(64, 32, device=DEVICE), torch.randn(64, 1, device=DEVICE)
    dtype = {"mixed_bfloat16": torch.bfloat16, "mixed_float16": torch.float16}.get(policy)
    scaler = torch.amp.GradScaler(DEVICE, enabled=dtype is torch.float16 and loss_scaling)

    def step():
        optimizer.zero_grad()
        with torch.autocast(DEVICE, dtype=dtype or torch.float32, enabled=dtype is not None):
            loss = torch.nn.functional.mse_loss(model(inputs).float(), targets)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return loss.detach()

    return step
