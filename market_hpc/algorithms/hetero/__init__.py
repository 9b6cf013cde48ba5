"""Heterogeneity-aware allocation's algorithms (Netti et al., ISC'18): node orderings over GPU/MIC
nodes and their state.
"""
