"""BBSched's algorithms (Fan et al., HPDC'19): window selection over nodes and burst buffer, the
exact Pareto front and the genetic algorithms.
"""
