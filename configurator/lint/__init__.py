"""Lint Kubernetes manifests and Helm output against vLLM's memory budget: load -> extract -> evaluate."""
