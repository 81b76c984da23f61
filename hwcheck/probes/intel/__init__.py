"""Intel GPUs: Arc, Flex, Max and integrated graphics from /sys/class/drm and the PCI bus
(gpu.py), and the Level Zero and compute-runtime packages that drive them (driver.py)."""
