"""The exporters of `lifeline export`: a target's decoded program (JSON, harness/programs/common/codec.h) as a
standalone reproducer in upstream's own terms. One module per upstream language: ggml_c (C on ggml's public
API: ggml_graph_topology, ggml_vulkan_graph_topology) and torch_py (Python on PyTorch and NumPy:
torch_capsule_lifecycle). cli/lifeline/export.py's EXPORTERS table says which target uses which."""
