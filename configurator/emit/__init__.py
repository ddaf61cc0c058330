"""Emitters, pure functions of a plan: `vllm serve` arguments, Helm values for charts/vllm and for
vllm-project/production-stack, and plain Kubernetes manifests."""
