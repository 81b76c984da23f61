"""Pieces shared by the two Keras scripts: imports, settings, the user's model and data."""

from __future__ import annotations

from hwcheck import __version__
from hwcheck.emit import spec as defaults
from hwcheck.emit.spec import ScriptSpec
from hwcheck.emit.template import Prose, Word, fill

_IMPORTS_KERAS3 = """
    import keras
    import numpy as np
    import tensorflow as tf
"""

_IMPORTS_KERAS2 = """
    import numpy as np
    import tensorflow as tf

    # Keras 2: the tf_keras package from TensorFlow 2.16 on (where tf.keras is Keras 3 unless
    # TF_USE_LEGACY_KERAS=1), tf.keras itself before that.
    try:
        import tf_keras as keras
    except ImportError:
        from tensorflow import keras
"""

_SETTINGS = """
    POLICY = $policy
    POLICIES = ("mixed_float16", "mixed_bfloat16", "float32")
    STEPS = $steps
    # A multiple of 8, like every layer width below: Tensor Cores need dimensions divisible by 8.
    BATCH_SIZE = $batch_size
    LEARNING_RATE = 0.001
"""

_USER_SECTION = """
    # ----------------------------------------------------------------------------
    # YOUR MODEL AND DATA: replace build_model() and make_dataset() (and the loss and
    # optimizer if yours differ). Everything below this section is the training loop.
    # ----------------------------------------------------------------------------


    def build_model() -> keras.Model:
        \"\"\"The model. It is built after the dtype policy is set, so its layers take the policy.\"\"\"
        inputs = keras.Input(shape=(32,))
        x = keras.layers.Dense(64, activation="relu")(inputs)
        x = keras.layers.Dense(64, activation="relu")(x)
        x = keras.layers.Dense(10)(x)
        # The output stays float32 under every policy: a softmax or loss computed in
        # 16 bits is numerically unstable. This linear activation only casts.
        outputs = keras.layers.Activation("linear", dtype="float32")(x)
        return keras.Model(inputs, outputs)


    def make_dataset(batch_size: int) -> tf.data.Dataset:
        \"\"\"An endless dataset of (features, labels) batches; synthetic until you replace it.\"\"\"
        rng = np.random.default_rng(0)
        features = rng.standard_normal((4096, 32)).astype("float32")
        # Labels from a fixed random linear map, so the model has something to learn.
        labels = np.argmax(features @ rng.standard_normal((32, 10)), axis=1)
        dataset = tf.data.Dataset.from_tensor_slices((features, labels))
        return dataset.shuffle(4096, seed=0).repeat().batch(batch_size, drop_remainder=True)


    def make_optimizer() -> keras.optimizers.Optimizer:
        \"\"\"The optimizer (for mixed_float16 it is wrapped for loss scaling below).\"\"\"
        return keras.optimizers.Adam(learning_rate=LEARNING_RATE)


    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    # ----------------------------------------------------------------------------
    # End of YOUR MODEL AND DATA.
    # ----------------------------------------------------------------------------
"""

_CHECK_KERAS3 = """
    def check_setup() -> None:
        \"\"\"Stop at once, with the fix, when this script cannot run as written.\"\"\"
        if POLICY not in POLICIES:
            sys.exit(f"POLICY must be one of {', '.join(POLICIES)}, not {POLICY!r}")
        if int(keras.__version__.split(".")[0]) < 3:
            sys.exit(
                f"This script is written for Keras 3 but Keras {keras.__version__} is installed: "
                f"pip install 'keras>=3', or emit one for Keras 2 with "
                f"hwcheck config --framework $framework --keras-version 2"
            )
"""

# Keras 2's LossScaleOptimizer has get_scaled_loss; Keras 3's has not.
_CHECK_KERAS2 = """
    def check_setup() -> None:
        \"\"\"Stop at once, with the fix, when this script cannot run as written.\"\"\"
        if POLICY not in POLICIES:
            sys.exit(f"POLICY must be one of {', '.join(POLICIES)}, not {POLICY!r}")
        if not hasattr(keras.mixed_precision.LossScaleOptimizer, "get_scaled_loss"):
            sys.exit(
                "This script is written for Keras 2 but only Keras 3 is installed: "
                "pip install tf_keras, or emit one for Keras 3 with "
                "hwcheck config --framework $framework --keras-version 3"
            )
"""

_GPU_VISIBLE = """
    def gpu_visible() -> bool:
        \"\"\"Whether TensorFlow sees a GPU (it then places the model there).\"\"\"
        return bool(tf.config.list_physical_devices("GPU"))
"""

# SPEC §3: with the defaults, mixed_float16 took ~3 s/step on a 2-core Sapphire-Rapids-class
# VM (oneDNN's fused float16 MatMul+BiasAdd); under jit_compile it took milliseconds.
_CPU_FLOAT16_WARNING = """
    def warn_float16_on_cpu() -> None:
        \"\"\"Say what float16 costs on a CPU and what this script does about it.\"\"\"
        print(
            "warning: no GPU is visible, so mixed_float16 runs on the CPU, where it is slower than "
            "float32 (no CPU computes float16 fast in TensorFlow). oneDNN's fused float16 kernels "
            "take seconds per step, so the train step is compiled with XLA (jit_compile) to avoid "
            "them. On a CPU train in mixed_bfloat16 (CPUs with AMX) or float32.",
            file=sys.stderr,
            flush=True,
        )
"""


def docstring(spec: ScriptSpec, title: str, body: str) -> str:
    """The module docstring: what the script is, where the user's code goes, what it prints."""
    return fill(
        '''
        """$title

        Emitted by `hwcheck config --framework $framework` (hwcheck $version) for Keras $keras.
        It runs as is on synthetic data: replace the section marked YOUR MODEL AND DATA with
        your own. The .settings.json file written beside it gives the reason for each choice.

        $body
        """
        ''',
        title=Prose(title),
        framework=Word(spec.framework),
        version=Word(__version__),
        keras=spec.keras_major,
        body=Prose(body),
    )


def imports(spec: ScriptSpec, stdlib: tuple[str, ...]) -> str:
    """The import block: standard library first, then Keras as this Keras version needs."""
    standard = "".join(f"import {name}\n" for name in sorted(stdlib))
    third_party = fill(_IMPORTS_KERAS3 if spec.keras_major == 3 else _IMPORTS_KERAS2)
    return "from __future__ import annotations\n\n" + standard + "\n" + third_party.strip("\n")


def settings(spec: ScriptSpec) -> str:
    """The constants at the top: policy, steps, batch size, learning rate."""
    return fill(_SETTINGS, policy=spec.policy, steps=spec.steps, batch_size=spec.batch_size)


def loss_scale_settings() -> str:
    """Constants for Keras dynamic loss scaling."""
    return fill(
        """
        # Dynamic loss scaling (the Keras defaults): the loss is multiplied by the scale before
        # the backward pass so small float16 gradients do not flush to zero; when a gradient
        # overflows to inf or NaN the step is skipped and the scale halves, and after
        # LOSS_SCALE_GROWTH_STEPS finite steps in a row the scale doubles.
        INITIAL_LOSS_SCALE = $initial
        LOSS_SCALE_GROWTH_STEPS = $growth
        """,
        initial=defaults.KERAS_INITIAL_SCALE,
        growth=defaults.KERAS_GROWTH_STEPS,
    )


def user_section() -> str:
    """build_model, make_dataset, make_optimizer and the loss: the part the user replaces."""
    return fill(_USER_SECTION)


def check_setup(spec: ScriptSpec) -> str:
    """check_setup(): the policy is one of three names and the installed Keras matches."""
    template = _CHECK_KERAS3 if spec.keras_major == 3 else _CHECK_KERAS2
    return fill(template, framework=Word(spec.framework))


def gpu_visible() -> str:
    """gpu_visible()."""
    return fill(_GPU_VISIBLE)


def cpu_float16_warning() -> str:
    """warn_float16_on_cpu()."""
    return fill(_CPU_FLOAT16_WARNING)
