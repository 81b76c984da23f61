"""Stand-ins for hardware that is not on the test machine: NVML without a GPU, a sysfs tree."""
