"""The CP-SAT family's algorithms (Galleguillos et al.; Netti et al.'s CPH): the shared instance,
the models (PCP'20, PCP'19, HCP'19 pooled), their greedy hints, budgets, reductions and
redundant rules.
"""
