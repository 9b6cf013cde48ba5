"""BBSched (Fan et al., HPDC'19) and its baselines: the schedulers, the shared window invocation
and the starvation bound.
"""
