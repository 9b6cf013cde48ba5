"""market_hpc: agent-based simulation of HPC dispatching under overload."""

from market_hpc.errors import ConfigError, MarketHpcError, PolicyError, TraceFormatError

__version__ = "0.1.0"

__all__ = ["ConfigError", "MarketHpcError", "PolicyError", "TraceFormatError", "__version__"]
