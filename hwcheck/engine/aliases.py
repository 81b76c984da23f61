"""The words people type for frameworks and precisions, and the one resolver to hwcheck's names.

Each vocabulary maps a canonical name to the other spellings that mean it unambiguously.
Matching ignores case and treats "-" and "_" alike. Kept as plain data in Python, not in
rules/: the command line needs it to build --help before any rules file is read.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable


TRAINER_WORDS = {
    "lightning": ("pytorch-lightning", "pl", "lightning.pytorch"),
    "hf-trainer": ("hf", "transformers", "huggingface", "trainer"),
    "accelerate": ("hf-accelerate",),
    "deepspeed": ("ds",),
}
FRAMEWORK_WORDS = {
    "keras": ("keras3", "keras_core"),
    "tensorflow": ("tf", "tf.keras", "tf_keras", "keras2"),
    "torch": ("pytorch",),
    "jax": ("flax",),
    **TRAINER_WORDS,
}
# config's templates: keras-custom is the TensorFlow loop, so TensorFlow's words pick it.
SCRIPT_WORDS = {
    "keras": FRAMEWORK_WORDS["keras"],
    "keras-custom": ("tensorflow", *FRAMEWORK_WORDS["tensorflow"]),
    "torch": FRAMEWORK_WORDS["torch"],
    "jax": FRAMEWORK_WORDS["jax"],
    **TRAINER_WORDS,
}
POLICY_WORDS = {
    "mixed_float16": ("fp16", "float16", "half", "mixed_fp16"),
    "mixed_bfloat16": ("bf16", "bfloat16", "mixed_bf16"),
    "float32": ("fp32", "f32", "single"),
}
PREFERENCE_WORDS = {
    "float16": ("fp16", "half", "mixed_float16"),
    "bfloat16": ("bf16", "mixed_bfloat16"),
}
# hwcheck bench's variants: the policies plus float32 with TF32 and float16 without loss scaling.
VARIANT_WORDS = {
    "float32": POLICY_WORDS["float32"],
    "float32+tf32": ("tf32",),
    "mixed_bfloat16": POLICY_WORDS["mixed_bfloat16"],
    "mixed_float16": POLICY_WORDS["mixed_float16"],
    "mixed_float16-noscale": ("fp16-noscale",),
}
VOCABULARIES = {
    "framework": FRAMEWORK_WORDS,
    "script": SCRIPT_WORDS,
    "policy": POLICY_WORDS,
    "preference": PREFERENCE_WORDS,
    "precision": VARIANT_WORDS,
}


class UnknownWord(ValueError):
    """A word no vocabulary entry means; the message names the closest word and the choices."""


def _key(word: str) -> str:
    return word.strip().lower().replace("-", "_")


def resolve(kind: str, word: str, choices: Iterable[str] | None = None) -> str:
    """The canonical name `word` means in vocabulary `kind` (one of VOCABULARIES), limited to `choices`.

    Raises UnknownWord suggesting the closest known spelling (difflib).
    """
    vocabulary = VOCABULARIES[kind]
    allowed = tuple(choices) if choices is not None else tuple(vocabulary)
    spellings: dict[str, str] = {}
    for name in allowed:
        for spelling in (name, *vocabulary.get(name, ())):
            spellings.setdefault(_key(spelling), name)
    found = spellings.get(_key(str(word)))
    if found is not None:
        return found
    import difflib  # only on the error path: ~2 ms that doctor need not pay

    close = difflib.get_close_matches(_key(str(word)), list(spellings), n=1, cutoff=0.6)
    hint = f"did you mean {_spelled(close[0], spellings, vocabulary)}? " if close else ""
    raise UnknownWord(f"unknown {kind} {str(word)[:40]!r}; {hint}expected one of {', '.join(allowed)}")


def _spelled(key: str, spellings: dict[str, str], vocabulary: dict[str, tuple[str, ...]]) -> str:
    name = spellings[key]
    for spelling in (name, *vocabulary.get(name, ())):
        if _key(spelling) == key:
            return spelling if spelling == name else f"{spelling} ({name})"
    return name


def described(kind: str, choices: Iterable[str] | None = None) -> str:
    """The other accepted spellings, for --help: "pytorch = torch; tf, tf.keras = tensorflow"."""
    vocabulary = VOCABULARIES[kind]
    names = tuple(choices) if choices is not None else tuple(vocabulary)
    return "; ".join(f"{', '.join(vocabulary[name])} = {name}" for name in names if vocabulary.get(name))
