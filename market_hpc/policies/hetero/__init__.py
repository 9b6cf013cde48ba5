"""Netti et al. (ISC'18): the heterogeneity-aware allocators and the PRB and EBF schedulers."""
