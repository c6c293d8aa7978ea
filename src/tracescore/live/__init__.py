"""Live scoring: the worker that assembles, samples, scores and emits traces as they arrive."""
