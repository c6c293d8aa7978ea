"""The judge: provider backends, prompts' transport, limits, cache, costs and redaction."""
