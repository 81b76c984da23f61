"""The bottom layer: errors, bounded readers of outside input, versions, safe text, the rules tables.

Every other layer may import from here; nothing here imports another hwcheck layer.
"""

__version__ = "0.1.0"
