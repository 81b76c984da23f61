"""`hwcheck bench`: measure training step time per precision, each in a fresh process."""

from hwcheck.bench.session import bench

__all__ = ["bench"]
