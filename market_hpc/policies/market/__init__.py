"""The market dispatchers (Singh et al., HPCS'15), their fair EASY baselines and the registered
bidders.
"""
