"""Multi-queue dispatchers (Kondameedi & Vadhiyar) and the views they hand each partition."""
