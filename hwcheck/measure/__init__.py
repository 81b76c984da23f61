"""`hwcheck bench`: measure training step time per precision, each in a fresh process.

The public entry is the plain function `hwcheck.bench(...)`; this package is named `measure`
so that importing one of its modules never rebinds that name.
"""
