"""Paths of the traces the tests read: the repo's own copies under ``data/traces/``
(where they come from and their licences: ``data/traces/README.md``)."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRACES = os.path.join(ROOT, "data", "traces")
MOONCAKE_SYNTHETIC = os.path.join(TRACES, "mooncake_synthetic_trace.jsonl")
KIMI_FACTS = os.path.join(TRACES, "kimi_k3_tp8_litehit_facts.csv")
