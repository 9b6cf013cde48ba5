"""An example market_hpc policy plugin (see ``policies``)."""
