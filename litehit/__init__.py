"""litehit: exact, capacity-independent LRU hit curves for KV-cache block traces.

Replay a trace once; answer prefix hits for any LRU capacity afterwards::

    raw request (keys, input_token_len)
        |  normalize_request: length contract, optional prefix hash, re-blocking
        v
    NormalizedRequest.block_keys
        |  LiteHit.process_request / process_batch  (no capacity anywhere)
        |  Fenwick stack depths, snapshot evaluation, tail-first commit, optional TTL
        v
    RequestFact.hit_curve = [[start_required_blocks, run_length], ...]
        |                                 |                          |
        |  litehit_facts.csv              |  HitCurveProjector       |  AggregateCurve
        |  (factsfile: replay,            |  (each request at K      |  (the sum of all
        |   server LITEHIT SAVE)          |   capacities)            |   curves, any C)
        v                                 v                          v
    query / plot: hit blocks per      query / plot: Totals        the server's shadow:
    request                           per instance                INFO, LITEHIT CURVE

``litehit.projector`` holds the only code that turns a capacity into hit blocks.

Modules: ``preprocess`` (normalize_request, prefix hash), ``kernel`` (compiled replay),
``core`` (LiteHit), ``facts`` (RequestFact, BatchFacts, RLE and the curve's JSON),
``projector`` (capacities: parsing, bytes -> blocks, and every projection onto hits),
``factsfile`` (the facts CSV). The offline tools: ``trace``, ``config``, ``lanes``, ``offline`` (replay),
``query``, ``plot``, ``convert``, ``cli``.
"""
from importlib.metadata import PackageNotFoundError, version

from .core import LiteHit
from .facts import (
    BatchFacts,
    HitCurveSegment,
    RequestFact,
    encode_hit_curve,
    hit_curve_from_json,
    hit_curve_to_json,
)
from .preprocess import (
    NormalizedRequest,
    apply_prefix_hash,
    normalize_request,
    prefix_hash_next,
    to_int64,
)
from .projector import (
    BYTES_PER_GB,
    INFINITE_CAPACITY,
    AggregateCurve,
    Capacity,
    HitCurveProjector,
    parse_capacity,
)

try:
    __version__ = version("ferrumkv_py")      # litehit ships in the ferrumkv_py project
except PackageNotFoundError:                 # a source tree that was never installed
    __version__ = "unknown"

__all__ = [
    "AggregateCurve",
    "BYTES_PER_GB",
    "Capacity",
    "INFINITE_CAPACITY",
    "BatchFacts",
    "HitCurveProjector",
    "HitCurveSegment",
    "LiteHit",
    "NormalizedRequest",
    "RequestFact",
    "apply_prefix_hash",
    "encode_hit_curve",
    "hit_curve_from_json",
    "hit_curve_to_json",
    "normalize_request",
    "parse_capacity",
    "prefix_hash_next",
    "to_int64",
    "__version__",
]
