"""The exporters of `lifeline export`: a target's decoded program (JSON, harness/programs/common/codec.h) as a
standalone reproducer in upstream's own terms. One module per exporter, each with generate(program, finding):
ggml_c (C on ggml's public API: ggml_graph_topology, ggml_vulkan_graph_topology; with its parts ggml_c_graphs and
ggml_c_file), whisper_c (C on whisper.h: whisper_string_handoff), llama_c (C on llama.h:
llama_memory_differential) and torch_py (Python on PyTorch and NumPy:
torch_capsule_lifecycle; with its parts torch_py_values, torch_py_objects and torch_py_file).
cli/lifeline/export_source.py's EXPORTERS table says which target uses which."""
