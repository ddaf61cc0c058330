"""Reading Hugging Face configs and built-in profiles into a model description."""

from configurator.model.spec import LayerGeometry, MambaGeometry, ModelSpec, Quantization

__all__ = ["LayerGeometry", "MambaGeometry", "ModelSpec", "Quantization"]
