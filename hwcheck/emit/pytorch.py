"""The PyTorch script: torch.autocast, with torch.amp.GradScaler for float16."""

from __future__ import annotations

import textwrap

from hwcheck import __version__
from hwcheck.emit import spec as defaults
from hwcheck.emit.common import MAIN_GUARD, parse_args
from hwcheck.emit.guard import guard_class, guard_settings
from hwcheck.emit.spec import ScriptSpec
from hwcheck.emit.template import Prose, Word, fill, join_blocks

_DOCSTRING = '''
    """$title

    Emitted by `hwcheck config --framework torch` (hwcheck $version). It runs as is on
    synthetic data: replace the section marked YOUR MODEL AND DATA with your own. The
    .settings.json file written beside it gives the reason for each choice.

    $body
    """
'''

_SETTINGS = """
    POLICY = $policy
    POLICIES = ("mixed_float16", "mixed_bfloat16", "float32")
    # The dtype autocast computes in for each mixed policy; parameters stay float32.
    AUTOCAST_DTYPES = {"mixed_float16": torch.float16, "mixed_bfloat16": torch.bfloat16}
    STEPS = $steps
    # A multiple of 8, like every layer width below: Tensor Cores need dimensions divisible by 8.
    BATCH_SIZE = $batch_size
    LEARNING_RATE = 0.001
"""

_SCALER_SETTINGS = """
    # Dynamic loss scaling (torch.amp.GradScaler's defaults): the loss is multiplied by the
    # scale before backward() so small float16 gradients do not flush to zero; when a gradient
    # overflows to inf or NaN the step is skipped and the scale is multiplied by
    # BACKOFF_FACTOR, and after GROWTH_INTERVAL clean steps in a row by GROWTH_FACTOR.
    INITIAL_LOSS_SCALE = $initial
    GROWTH_FACTOR = $growth_factor
    BACKOFF_FACTOR = $backoff_factor
    GROWTH_INTERVAL = $growth_interval
    # --inject-overflow multiplies the loss by this: still finite in float32, but its
    # float16 gradients overflow, as they would in a model that outgrows float16.
    OVERFLOW_FACTOR = $overflow
"""

_USER_SECTION = """
    # ----------------------------------------------------------------------------
    # YOUR MODEL AND DATA: replace build_model() and make_batches() (and the loss and
    # optimizer if yours differ). Everything below this section is the training loop.
    # ----------------------------------------------------------------------------


    def build_model() -> nn.Module:
        \"\"\"The model. Its parameters are float32; autocast picks each op's compute dtype.\"\"\"
        return nn.Sequential(
            nn.Linear(32, 64),
            nn.ReLU(),
            nn.Linear(64, 64),
            nn.ReLU(),
            nn.Linear(64, 10),
        )


    def make_batches(batch_size: int, device: str) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        \"\"\"Endless (features, labels) batches on `device`; synthetic until you replace it.\"\"\"
        generator = torch.Generator().manual_seed(0)
        features = torch.randn(4096, 32, generator=generator)
        # Labels from a fixed random linear map, so the model has something to learn.
        labels = (features @ torch.randn(32, 10, generator=generator)).argmax(dim=1)
        while True:
            order = torch.randperm(len(features), generator=generator)
            for start in range(0, len(order) - batch_size + 1, batch_size):
                chosen = order[start : start + batch_size]
                yield features[chosen].to(device), labels[chosen].to(device)


    def make_optimizer(model: nn.Module) -> torch.optim.Optimizer:
        \"\"\"The optimizer.\"\"\"
        return torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)


    loss_fn = nn.CrossEntropyLoss()

    # ----------------------------------------------------------------------------
    # End of YOUR MODEL AND DATA.
    # ----------------------------------------------------------------------------
"""

_CHECK_SETUP = """
    def check_setup() -> None:
        \"\"\"Stop at once, with the fix, when this script cannot run as written.\"\"\"
        if POLICY not in POLICIES:
            sys.exit(f"POLICY must be one of {', '.join(POLICIES)}, not {POLICY!r}")
"""

# TensorFloat-32 for float32 matrix multiplications: PyTorch leaves it off by default
# (torch.backends.cuda.matmul.allow_tf32 is False since 1.12) while TensorFlow turns it on.
_TF32 = """
    def use_tf32(device: str) -> None:
        \"\"\"Let float32 matmuls use TF32 Tensor Cores (10-bit mantissa inputs) on this GPU.\"\"\"
        # PyTorch leaves TF32 off for matmuls by default; TensorFlow turns it on. Remove
        # this call if your float32 math needs full float32 precision.
        if device == "cuda":
            torch.set_float32_matmul_precision("high")
"""

_CPU_FLOAT16_WARNING = """
    def warn_float16_on_cpu() -> None:
        \"\"\"Say what float16 costs on a CPU.\"\"\"
        print(
            "warning: no CUDA GPU is visible, so mixed_float16 runs on the CPU, where it gains "
            "nothing over float32. On a CPU train in mixed_bfloat16 (CPUs with AMX) or float32.",
            file=sys.stderr,
            flush=True,
        )
"""


_MAIN_PROLOGUE = """
    def main() -> None:
        \"\"\"Train for --steps steps, printing one line per step.\"\"\"
        args = parse_args()
        check_setup()
        # Chosen at run time, so the same script runs on a GPU machine and on a laptop.
        device = "cuda" if torch.cuda.is_available() else "cpu"
"""

_MAIN_FLOAT32 = """
        model = build_model().to(device)
        optimizer = make_optimizer(model)
        batches = make_batches(BATCH_SIZE, device)
        print(f"start policy={POLICY} device={device} steps={args.steps}", flush=True)
        for step in range(1, args.steps + 1):
            features, labels = next(batches)
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(features), labels)
            loss.backward()
            optimizer.step()
            print(f"step={step} policy={POLICY} loss={loss.item():.6g}", flush=True)
        print(f"done steps={args.steps} policy={POLICY}", flush=True)
"""

_MAIN_BFLOAT16 = """
        model = build_model().to(device)
        optimizer = make_optimizer(model)
        batches = make_batches(BATCH_SIZE, device)
        print(f"start policy={POLICY} device={device} steps={args.steps}", flush=True)
        for step in range(1, args.steps + 1):
            features, labels = next(batches)
            optimizer.zero_grad(set_to_none=True)
            # autocast runs matmuls and convolutions in bfloat16 and keeps precision-sensitive
            # ops in float32. bfloat16 has float32's range, so no loss scaling is needed.
            with torch.autocast(device_type=device, dtype=torch.bfloat16):
                logits = model(features)
            # The loss is computed in float32: a 16-bit softmax or loss is unstable.
            loss = loss_fn(logits.float(), labels)
            loss.backward()
            optimizer.step()
            print(f"step={step} policy={POLICY} loss={loss.item():.6g}", flush=True)
        print(f"done steps={args.steps} policy={POLICY}", flush=True)
"""

_MAIN_FLOAT16 = """
        if device == "cpu":
            warn_float16_on_cpu()
        model = build_model().to(device)
        optimizer = make_optimizer(model)
        scaler = torch.amp.GradScaler(
            device,
            init_scale=INITIAL_LOSS_SCALE,
            growth_factor=GROWTH_FACTOR,
            backoff_factor=BACKOFF_FACTOR,
            growth_interval=GROWTH_INTERVAL,
        )
        batches = make_batches(BATCH_SIZE, device)
        print(f"start policy={POLICY} device={device} steps={args.steps}", flush=True)
        for step in range(1, args.steps + 1):
            features, labels = next(batches)
            optimizer.zero_grad(set_to_none=True)
            # autocast runs matmuls and convolutions in float16 and keeps precision-sensitive
            # ops in float32.
            with torch.autocast(device_type=device, dtype=torch.float16):
                logits = model(features)
            # The loss is computed in float32: a 16-bit softmax or loss is unstable.
            loss = loss_fn(logits.float(), labels)
            overflow = args.inject_overflow is not None and step >= args.inject_overflow
            scale_used = scaler.get_scale()
            scaler.scale(loss * OVERFLOW_FACTOR if overflow else loss).backward()
            # step() unscales the gradients and skips the update if any is inf or NaN;
            # update() then lowers the scale after an overflow or raises it after a clean run.
            scaler.step(optimizer)
            scaler.update()
            skipped = scaler.get_scale() < scale_used
            print(
                f"step={step} policy={POLICY} loss={loss.item():.6g} "
                f"loss_scale={scaler.get_scale():g} skipped={int(skipped)}",
                flush=True,
            )
        print(f"done steps={args.steps} policy={POLICY}", flush=True)
"""

_MAIN_GUARDED = """
        if device == "cpu":
            warn_float16_on_cpu()
        model = build_model().to(device)
        optimizer = make_optimizer(model)
        scaler = torch.amp.GradScaler(
            device,
            init_scale=INITIAL_LOSS_SCALE,
            growth_factor=GROWTH_FACTOR,
            backoff_factor=BACKOFF_FACTOR,
            growth_interval=GROWTH_INTERVAL,
        )
        guard = PrecisionGuard(INITIAL_LOSS_SCALE)
        policy = POLICY
        batches = make_batches(BATCH_SIZE, device)
        print(f"start policy={POLICY} device={device} steps={args.steps}", flush=True)
        for step in range(1, args.steps + 1):
            features, labels = next(batches)
            optimizer.zero_grad(set_to_none=True)
            dtype = AUTOCAST_DTYPES.get(policy)
            # autocast runs matmuls and convolutions in `dtype` and keeps precision-sensitive
            # ops in float32; float32 runs with it disabled.
            with torch.autocast(device_type=device, dtype=dtype, enabled=dtype is not None):
                logits = model(features)
            # The loss is computed in float32: a 16-bit softmax or loss is unstable.
            loss = loss_fn(logits.float(), labels)
            if policy != "mixed_float16":
                loss.backward()
                optimizer.step()
                print(f"step={step} policy={policy} loss={loss.item():.6g}", flush=True)
                continue
            overflow = args.inject_overflow is not None and step >= args.inject_overflow
            scale_used = scaler.get_scale()
            scaler.scale(loss * OVERFLOW_FACTOR if overflow else loss).backward()
            # step() unscales the gradients and skips the update if any is inf or NaN;
            # update() then lowers the scale after an overflow or raises it after a clean run.
            scaler.step(optimizer)
            scaler.update()
            loss_scale = scaler.get_scale()
            finite = loss_scale >= scale_used
            print(
                f"step={step} policy={policy} loss={loss.item():.6g} "
                f"loss_scale={loss_scale:g} skipped={int(not finite)}",
                flush=True,
            )
            problem = guard.check(finite, loss_scale)
            if problem is not None:
                # autocast never changes the parameters (they stay float32) and the optimizer
                # state is untouched, so unlike Keras nothing is rebuilt: the next step simply
                # runs in the new policy, without the scaler.
                policy = FALLBACK_POLICY
                print(
                    f"switch step={step} from=mixed_float16 to={policy} because: {problem}",
                    flush=True,
                )
        print(f"done steps={args.steps} policy={policy}", flush=True)
"""


def script(spec: ScriptSpec) -> str:
    """The full text of the PyTorch training script for `spec`."""
    stdlib = ["argparse", "sys"]
    if spec.uses_guard:
        stdlib.append("collections")
    imports = "from __future__ import annotations\n\n"
    imports += "".join(f"import {name}\n" for name in sorted(stdlib))
    imports += "from collections.abc import Iterator\n\nimport torch\nfrom torch import nn"
    blocks = [imports + "\n\n" + fill(_SETTINGS, **_settings_values(spec)).strip("\n")]
    if spec.float16:
        blocks.append(
            fill(
                _SCALER_SETTINGS,
                initial=defaults.TORCH_INITIAL_SCALE,
                growth_factor=defaults.TORCH_GROWTH_FACTOR,
                backoff_factor=defaults.TORCH_BACKOFF_FACTOR,
                growth_interval=defaults.TORCH_GROWTH_INTERVAL,
                overflow=defaults.OVERFLOW_FACTOR,
            )
        )
    if spec.uses_guard:
        blocks.append(guard_settings(spec))
    blocks += [fill(_USER_SECTION), fill(_CHECK_SETUP)]
    if spec.has_tf32:
        blocks.append(fill(_TF32))
    if spec.float16:
        blocks.append(fill(_CPU_FLOAT16_WARNING))
    if spec.uses_guard:
        blocks.append(guard_class())
    blocks.append(parse_args(overflow_flag=spec.float16))
    blocks.append(_main(spec))
    blocks.append(MAIN_GUARD)
    return join_blocks(_docstring(spec), *blocks)


def _settings_values(spec: ScriptSpec) -> dict[str, int | str]:
    return {"policy": spec.policy, "steps": spec.steps, "batch_size": spec.batch_size}


def _docstring(spec: ScriptSpec) -> str:
    if spec.float16:
        title = "Train a PyTorch model in mixed_float16: autocast float16 with a GradScaler."
        line = "step=12 policy=mixed_float16 loss=1.83107 loss_scale=65536 skipped=0"
    elif spec.policy == "mixed_bfloat16":
        title = "Train a PyTorch model in mixed_bfloat16: autocast bfloat16, no loss scaling."
        line = "step=12 policy=mixed_bfloat16 loss=1.83107"
    else:
        title = "Train a PyTorch model in float32."
        line = "step=12 policy=float32 loss=1.83107"
    body = f"Each step prints one line of key=value pairs:\n    {line}"
    if spec.uses_guard:
        body += (
            "\nand when the precision guard gives up on float16 it prints\n"
            "    switch step=N from=mixed_float16 to=POLICY because: REASON\n"
            "and carries on in POLICY with the same model and optimizer."
        )
    return fill(_DOCSTRING, title=Prose(title), version=Word(__version__), body=Prose(body))


def _main(spec: ScriptSpec) -> str:
    if spec.uses_guard:
        loop = _MAIN_GUARDED
    elif spec.float16:
        loop = _MAIN_FLOAT16
    elif spec.policy == "mixed_bfloat16":
        loop = _MAIN_BFLOAT16
    else:
        loop = _MAIN_FLOAT32
    prologue = fill(_MAIN_PROLOGUE).strip("\n") + "\n"
    if spec.has_tf32:
        prologue += "    use_tf32(device)\n"
    return prologue + textwrap.indent(fill(loop).strip("\n"), "    ")
