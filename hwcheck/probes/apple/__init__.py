"""Apple silicon: the chip and its unified memory, the macOS version (gpu.py), and whether the
installed PyTorch was built with MPS, read from its Mach-O load commands (macho.py)."""
