"""Where results go: Prometheus metrics, OTel evaluation events."""
