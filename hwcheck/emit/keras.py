"""The Keras model.fit script: the policy set before the model is built, a float32 output."""

from __future__ import annotations

from hwcheck.emit import common, keras_common
from hwcheck.emit.spec import ScriptSpec
from hwcheck.emit.template import Word, fill, join_blocks

_STEP_PRINTER = """
class StepPrinter(keras.callbacks.Callback):
    \"\"\"Prints one key=value line per training step.\"\"\"

    def __init__(self) -> None:
        super().__init__()
        self.step = 0

    def on_train_batch_end(self, batch, logs=None):
        self.step += 1
        # Keras reports the loss as its running mean over the epoch so far.
        print(f"step={self.step} policy={POLICY} loss={float(logs['loss']):.6g}", flush=True)
"""

_STEP_PRINTER_FLOAT16 = """
class StepPrinter(keras.callbacks.Callback):
    \"\"\"Prints one key=value line per training step, with the live loss scale.\"\"\"

    def __init__(self) -> None:
        super().__init__()
        self.step = 0

    def on_train_batch_end(self, batch, logs=None):
        self.step += 1
        # Keras reports the loss as its running mean over the epoch so far.
        loss = float(logs["loss"])
        loss_scale = float(self.model.optimizer.$scale_attribute)
        print(
            f"step={self.step} policy={POLICY} loss={loss:.6g} loss_scale={loss_scale:g}",
            flush=True,
        )
"""

_MAIN = """
def main() -> None:
    \"\"\"Build, compile and fit, printing one line per step.\"\"\"
    args = parse_args()
    check_setup()
    # The policy is set before the model is built: layers take the global policy when
    # they are created, and setting it later changes none of them.
    keras.mixed_precision.set_global_policy(POLICY)
    model = build_model()
    # jit_compile stays at its default, off on a CPU: bfloat16 there runs fastest through
    # oneDNN without XLA.
    model.compile(optimizer=make_optimizer(), loss=loss_fn)
    print(f"start policy={POLICY} gpu={int(gpu_visible())} steps={args.steps}", flush=True)
    model.fit(
        make_dataset(BATCH_SIZE),
        epochs=1,
        steps_per_epoch=args.steps,
        shuffle=False,  # make_dataset() shuffles
        verbose=0,
        callbacks=[StepPrinter()],
    )
    print(f"done steps={args.steps} policy={POLICY}", flush=True)
"""

_MAIN_FLOAT16 = """
def main() -> None:
    \"\"\"Build, compile and fit, printing one line per step.\"\"\"
    args = parse_args()
    check_setup()
    if not gpu_visible():
        warn_float16_on_cpu()
    # The policy is set before the model is built: layers take the global policy when
    # they are created, and setting it later changes none of them.
    keras.mixed_precision.set_global_policy(POLICY)
    model = build_model()
    # Under mixed_float16, compile() wraps the optimizer in a LossScaleOptimizer by itself
    # (dynamic loss scaling: initial scale 2**15, doubled after 2000 finite steps, halved
    # and the step skipped on inf/NaN), and fit() scales the loss and unscales the
    # gradients. A custom training loop has to do that itself.
    # On a CPU, oneDNN's fused float16 kernels take seconds per step; XLA avoids them.
    jit_compile = $gpu_jit if gpu_visible() else True
    model.compile(optimizer=make_optimizer(), loss=loss_fn, jit_compile=jit_compile)
    print(f"start policy={POLICY} gpu={int(gpu_visible())} steps={args.steps}", flush=True)
    model.fit(
        make_dataset(BATCH_SIZE),
        epochs=1,
        steps_per_epoch=args.steps,
        shuffle=False,  # make_dataset() shuffles
        verbose=0,
        callbacks=[StepPrinter()],
    )
    print(f"done steps={args.steps} policy={POLICY}", flush=True)
"""


def script(spec: ScriptSpec) -> str:
    """The full text of the model.fit training script for `spec`."""
    keras3 = spec.keras_major == 3
    title = f"Train a Keras model in {spec.policy} with model.fit."
    example = "loss_scale=32768" if spec.float16 else ""
    body = (
        "Each step prints one line of key=value pairs (the loss is Keras's running mean):\n"
        f"    step=12 policy={spec.policy} loss=1.83107 {example}".rstrip()
    )
    header = keras_common.imports(spec, ("argparse", "sys"))
    blocks = [
        header + "\n\n" + keras_common.settings(spec).strip("\n"),
        keras_common.user_section(),
        keras_common.check_setup(spec),
        keras_common.gpu_visible(),
    ]
    if spec.float16:
        blocks.append(keras_common.cpu_float16_warning())
        printer = fill(
            _STEP_PRINTER_FLOAT16,
            scale_attribute=Word("dynamic_scale" if keras3 else "loss_scale"),
        )
        # Keras 3 chooses XLA itself on a GPU ("auto"); Keras 2's compile() default is None.
        main = fill(_MAIN_FLOAT16, gpu_jit="auto" if keras3 else None)
    else:
        printer = fill(_STEP_PRINTER)
        main = fill(_MAIN)
    blocks += [
        printer,
        common.parse_args(overflow_flag=False),
        main,
        common.MAIN_GUARD,
    ]
    return join_blocks(keras_common.docstring(spec, title, body), *blocks)
