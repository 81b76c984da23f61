"""AMD's probes: GPUs from the ROCm kernel driver's topology (gpu.py) and the ROCm release (rocm.py)."""
