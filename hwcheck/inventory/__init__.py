"""Cluster inventory: merge many machines' reports into hardware classes and one shared policy.

Reports come from files (`hwcheck report` run under Slurm, by hand) or from a Ray cluster
(ray_collect); each is validated (reports), reduced to a small NodeReport and merged
(merge, cluster). `hwcheck nfd` labels Kubernetes nodes (nfd). This package imports no
submodule here, so `hwcheck doctor` pays nothing for it; rich, ray and the rules engine are
imported only where used.
"""
