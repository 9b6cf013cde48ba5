"""Pure algorithms: plain data in, plain data out. No Mesa, no model imports."""
