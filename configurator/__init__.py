"""vllm-configurator: predict vLLM's GPU memory budget and KV-cache capacity without a GPU."""

__version__ = "0.1.0"
