"""Emitters: a plan's flags as `vllm serve` arguments (later Helm values and manifests); pure functions."""
