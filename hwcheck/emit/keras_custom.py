"""The Keras custom-loop script: tf.GradientTape with the full dynamic loss-scaling loop."""

from __future__ import annotations

import textwrap

from hwcheck.emit import common, keras_common
from hwcheck.emit import spec as defaults
from hwcheck.emit.guard import guard_class, guard_settings
from hwcheck.emit.spec import ScriptSpec
from hwcheck.emit.template import fill, join_blocks

_INIT_PLAIN = """
def __init__(self, policy: str) -> None:
    # The policy is set before the model is built: layers take the global policy when
    # they are created, and setting it later changes none of them.
    keras.mixed_precision.set_global_policy(policy)
    self.policy = policy
    self.model = build_model()
    self.optimizer = make_optimizer()
    self.optimizer.build(self.model.trainable_variables)
    # No jit_compile: bfloat16 on a CPU runs fastest through oneDNN without XLA.
    self.train_step = tf.function(self.plain_step)
"""

_INIT_FLOAT16 = """
def __init__(self, policy: str) -> None:
    # The policy is set before the model is built: layers take the global policy when
    # they are created, and setting it later changes none of them.
    keras.mixed_precision.set_global_policy(policy)
    self.policy = policy
    self.model = build_model()
    self.optimizer = make_optimizer()
    # The wrapper does the dynamic loss scaling around the real optimizer.
    self.loss_scale_optimizer = keras.mixed_precision.LossScaleOptimizer(
        self.optimizer,
        initial_scale=INITIAL_LOSS_SCALE,
        dynamic_growth_steps=LOSS_SCALE_GROWTH_STEPS,
    )
    self.loss_scale_optimizer.build(self.model.trainable_variables)
    # On a CPU, oneDNN's fused float16 kernels take seconds per step; XLA avoids them.
    self.train_step = tf.function(self.scaled_step, jit_compile=not gpu_visible())
"""

_INIT_GUARDED = """
def __init__(self, policy: str, previous: Trainer | None = None) -> None:
    # The policy is set before the model is built: layers take the global policy when
    # they are created, and setting it later changes none of them. That is why a
    # change of precision rebuilds the model rather than just setting a new policy.
    keras.mixed_precision.set_global_policy(policy)
    self.policy = policy
    self.model = build_model()
    self.optimizer = make_optimizer()
    self.loss_scale_optimizer = None
    if policy == "mixed_float16":
        # The wrapper does the dynamic loss scaling around the real optimizer.
        self.loss_scale_optimizer = keras.mixed_precision.LossScaleOptimizer(
            self.optimizer,
            initial_scale=INITIAL_LOSS_SCALE,
            dynamic_growth_steps=LOSS_SCALE_GROWTH_STEPS,
        )
        self.loss_scale_optimizer.build(self.model.trainable_variables)
        # On a CPU, oneDNN's fused float16 kernels take seconds per step; XLA avoids them.
        self.train_step = tf.function(self.scaled_step, jit_compile=not gpu_visible())
    else:
        self.optimizer.build(self.model.trainable_variables)
        # No jit_compile: bfloat16 on a CPU runs fastest through oneDNN without XLA.
        self.train_step = tf.function(self.plain_step)
    if previous is not None:
        self.carry_over(previous)
"""

_CARRY_OVER = """
def carry_over(self, previous: Trainer) -> None:
    \"\"\"Continue where `previous` stopped: its float32 weights and its optimizer state.\"\"\"
    # Variables are float32 under every policy (only the compute dtype differs),
    # so the weights move across exactly.
    self.model.set_weights(previous.model.get_weights())
    # The same model gives the optimizer its slots (step count, learning rate,
    # moments) in the same order, so they pair up one to one.
    for old, new in zip(previous.optimizer.variables, self.optimizer.variables, strict=True):
        new.assign(old)
"""

_SCALED_STEP_KERAS3 = """
def scaled_step(self, features, labels, loss_factor):
    \"\"\"A loss-scaled float16 step: returns the loss and whether all gradients were finite.\"\"\"
    variables = self.model.trainable_variables
    with tf.GradientTape() as tape:
        loss = loss_fn(labels, self.model(features, training=True))
        # Scale inside the tape, so the gradients come out scaled too.
        scaled_loss = self.loss_scale_optimizer.scale_loss(loss * loss_factor)
    scaled_grads = tape.gradient(scaled_loss, variables)
    finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in scaled_grads])
    # apply() divides the gradients by the scale and updates the weights; when any
    # gradient is inf or NaN it skips the update and halves the scale instead.
    self.loss_scale_optimizer.apply(scaled_grads, variables)
    return loss, finite
"""

_SCALED_STEP_KERAS2 = """
def scaled_step(self, features, labels, loss_factor):
    \"\"\"A loss-scaled float16 step: returns the loss and whether all gradients were finite.\"\"\"
    variables = self.model.trainable_variables
    with tf.GradientTape() as tape:
        loss = loss_fn(labels, self.model(features, training=True))
        # Scale inside the tape, so the gradients come out scaled too.
        scaled_loss = self.loss_scale_optimizer.get_scaled_loss(loss * loss_factor)
    scaled_grads = tape.gradient(scaled_loss, variables)
    grads = self.loss_scale_optimizer.get_unscaled_gradients(scaled_grads)
    finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads])
    # apply_gradients() updates the weights; when any gradient is inf or NaN it
    # skips the update and halves the scale instead.
    self.loss_scale_optimizer.apply_gradients(zip(grads, variables, strict=True))
    return loss, finite
"""

_PLAIN_STEP_KERAS3 = """
def plain_step(self, features, labels):
    \"\"\"One step without loss scaling (bfloat16 has float32's range; float32 needs none).\"\"\"
    variables = self.model.trainable_variables
    with tf.GradientTape() as tape:
        loss = loss_fn(labels, self.model(features, training=True))
    self.optimizer.apply(tape.gradient(loss, variables), variables)
    return loss
"""

_PLAIN_STEP_KERAS2 = """
def plain_step(self, features, labels):
    \"\"\"One step without loss scaling (bfloat16 has float32's range; float32 needs none).\"\"\"
    variables = self.model.trainable_variables
    with tf.GradientTape() as tape:
        loss = loss_fn(labels, self.model(features, training=True))
    grads = tape.gradient(loss, variables)
    self.optimizer.apply_gradients(zip(grads, variables, strict=True))
    return loss
"""

_LOSS_SCALE_KERAS3 = """
def loss_scale(self) -> float:
    \"\"\"The current dynamic loss scale.\"\"\"
    return float(self.loss_scale_optimizer.dynamic_scale)
"""

_LOSS_SCALE_KERAS2 = """
def loss_scale(self) -> float:
    \"\"\"The current dynamic loss scale.\"\"\"
    return float(self.loss_scale_optimizer.loss_scale)
"""

_MAIN_PLAIN = """
def main() -> None:
    \"\"\"Train for --steps steps, printing one line per step.\"\"\"
    args = parse_args()
    check_setup()
    trainer = Trainer(POLICY)
    print(f"start policy={POLICY} gpu={int(gpu_visible())} steps={args.steps}", flush=True)
    batches = iter(make_dataset(BATCH_SIZE))
    for step in range(1, args.steps + 1):
        features, labels = next(batches)
        loss = trainer.train_step(features, labels)
        print(f"step={step} policy={trainer.policy} loss={float(loss):.6g}", flush=True)
    print(f"done steps={args.steps} policy={trainer.policy}", flush=True)
"""

_MAIN_FLOAT16 = """
def main() -> None:
    \"\"\"Train for --steps steps, printing one line per step.\"\"\"
    args = parse_args()
    check_setup()
    if not gpu_visible():
        warn_float16_on_cpu()
    trainer = Trainer(POLICY)
    print(f"start policy={POLICY} gpu={int(gpu_visible())} steps={args.steps}", flush=True)
    batches = iter(make_dataset(BATCH_SIZE))
    for step in range(1, args.steps + 1):
        features, labels = next(batches)
        overflow = args.inject_overflow is not None and step >= args.inject_overflow
        # A tensor, not a Python float, so the step is traced once.
        loss_factor = tf.constant(OVERFLOW_FACTOR if overflow else 1.0)
        loss, finite = trainer.train_step(features, labels, loss_factor)
        print(
            f"step={step} policy={trainer.policy} loss={float(loss):.6g} "
            f"loss_scale={trainer.loss_scale():g} skipped={int(not finite)}",
            flush=True,
        )
    print(f"done steps={args.steps} policy={trainer.policy}", flush=True)
"""

_MAIN_GUARDED = """
def main() -> None:
    \"\"\"Train for --steps steps, printing one line per step and any change of precision.\"\"\"
    args = parse_args()
    check_setup()
    if not gpu_visible():
        warn_float16_on_cpu()
    trainer = Trainer(POLICY)
    guard = PrecisionGuard(INITIAL_LOSS_SCALE)
    print(f"start policy={POLICY} gpu={int(gpu_visible())} steps={args.steps}", flush=True)
    batches = iter(make_dataset(BATCH_SIZE))
    for step in range(1, args.steps + 1):
        features, labels = next(batches)
        if trainer.policy != "mixed_float16":
            loss = trainer.train_step(features, labels)
            print(f"step={step} policy={trainer.policy} loss={float(loss):.6g}", flush=True)
            continue
        overflow = args.inject_overflow is not None and step >= args.inject_overflow
        # A tensor, not a Python float, so the step is traced once.
        loss_factor = tf.constant(OVERFLOW_FACTOR if overflow else 1.0)
        loss, finite = trainer.train_step(features, labels, loss_factor)
        loss_scale = trainer.loss_scale()
        print(
            f"step={step} policy={trainer.policy} loss={float(loss):.6g} "
            f"loss_scale={loss_scale:g} skipped={int(not finite)}",
            flush=True,
        )
        problem = guard.check(bool(finite), loss_scale)
        if problem is not None:
            print(
                f"switch step={step} from={trainer.policy} to={FALLBACK_POLICY} "
                f"because: {problem}",
                flush=True,
            )
            trainer = Trainer(FALLBACK_POLICY, previous=trainer)
            iterations = int(trainer.optimizer.iterations)
            print(f"rebuilt policy={trainer.policy} optimizer_iterations={iterations}", flush=True)
    print(f"done steps={args.steps} policy={trainer.policy}", flush=True)
"""


def script(spec: ScriptSpec) -> str:
    """The full text of the custom-loop training script for `spec`."""
    keras3 = spec.keras_major == 3
    stdlib = ("argparse", "collections", "sys") if spec.uses_guard else ("argparse", "sys")
    if not spec.float16:
        title = f"Train a Keras model in {spec.policy} with a custom tf.GradientTape loop."
        body = "Each step prints one line of key=value pairs:\n    step=12 policy=P loss=1.83107"
    else:
        title = "Train a Keras model in mixed_float16 with a custom loop and dynamic loss scaling."
        body = (
            "Each step prints one line of key=value pairs:\n"
            "    step=12 policy=mixed_float16 loss=1.83107 loss_scale=32768 skipped=0"
        )
        if spec.uses_guard:
            body += (
                "\nand when the precision guard gives up on float16 it prints\n"
                "    switch step=N from=mixed_float16 to=POLICY because: REASON\n"
                "then rebuilds the model in POLICY and carries on with the same weights."
            )
    blocks = [
        # isort wants one blank line between the imports and the constants after them.
        keras_common.imports(spec, stdlib) + "\n\n" + keras_common.settings(spec).strip("\n"),
    ]
    if spec.float16:
        blocks.append(keras_common.loss_scale_settings())
        blocks.append(_overflow_setting())
    if spec.uses_guard:
        blocks.append(guard_settings(spec))
    blocks += [keras_common.user_section(), keras_common.check_setup(spec)]
    blocks.append(keras_common.gpu_visible())
    if spec.float16:
        blocks.append(keras_common.cpu_float16_warning())
    blocks.append(_trainer(spec, keras3))
    if spec.uses_guard:
        blocks.append(guard_class())
    blocks.append(common.parse_args(overflow_flag=spec.float16))
    main = _MAIN_GUARDED if spec.uses_guard else _MAIN_FLOAT16 if spec.float16 else _MAIN_PLAIN
    blocks += [fill(main), common.MAIN_GUARD]
    return join_blocks(keras_common.docstring(spec, title, body), *blocks)


def _overflow_setting() -> str:
    return fill(
        """
        # --inject-overflow multiplies the loss by this: still finite in float32, but its
        # float16 gradients overflow, as they would in a model that outgrows float16.
        OVERFLOW_FACTOR = $factor
        """,
        factor=defaults.OVERFLOW_FACTOR,
    )


def _trainer(spec: ScriptSpec, keras3: bool) -> str:
    if spec.uses_guard:
        methods = [_INIT_GUARDED, _CARRY_OVER]
    elif spec.float16:
        methods = [_INIT_FLOAT16]
    else:
        methods = [_INIT_PLAIN]
    if spec.float16:
        methods.append(_SCALED_STEP_KERAS3 if keras3 else _SCALED_STEP_KERAS2)
    if spec.uses_guard or not spec.float16:
        methods.append(_PLAIN_STEP_KERAS3 if keras3 else _PLAIN_STEP_KERAS2)
    if spec.float16:
        methods.append(_LOSS_SCALE_KERAS3 if keras3 else _LOSS_SCALE_KERAS2)
    body = "\n\n".join(textwrap.indent(fill(method).strip("\n"), "    ") for method in methods)
    docstring = '    """A model, its optimizer and its compiled train step, under one dtype policy."""'
    return f"class Trainer:\n{docstring}\n\n{body}\n"
