"""A plugin module whose import fails (a missing dependency), for tests/test_plugins.py."""

raise ImportError("No module named 'solver_we_do_not_have'")
