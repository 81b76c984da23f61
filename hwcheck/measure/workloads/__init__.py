"""Built-in bench workloads (mlp, conv, transformer, lstm) for torch, Keras 3 and JAX."""

from hwcheck.measure.workloads.sizes import SIZES, WORKLOADS, size_of

__all__ = ["SIZES", "WORKLOADS", "size_of"]
