"""NVIDIA: the GPUs through NVML (gpu.py, in a child process) and the CUDA/cuDNN libraries (cuda.py)."""
