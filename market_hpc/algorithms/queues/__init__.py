"""Adaptive queue partitions' algorithms (Kondameedi & Vadhiyar): routing and partitioning, the
partition simulator, the surrogate fit and the searches.
"""
