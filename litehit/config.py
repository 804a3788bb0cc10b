"""The offline replay configuration, read from JSON (docs/litehit.md lists every key).

A config names a trace, an output directory, the trace's native block size, and the
instances (analysis lanes) to replay. Each instance belongs to an instance group that carries
the TTL and the prefix-hash switch; its own ``block_size`` is the analysis granularity (a
multiple of the trace's), and its ``block_bytes`` is the sum of the spec sizes of its full
location spec group::

    {"trace_file_path": "trace.jsonl", "output_result_path": "out", "block_size": 512,
     "instance_groups": [{"name": "g", "ttl_seconds": 0, "enable_prefix_hash": false}],
     "instances": [{"instance_group_name": "g", "instance_id": "i1", "block_size": 512,
                    "location_spec_infos": [{"name": "kv", "size": 65536}],
                    "location_spec_groups": [{"name": "full", "spec_names": ["kv"]}],
                    "optimizer_state_info": {"full_location_spec_group_name": "full"}}]}

Top-level keys are described by the ``TOP_LEVEL`` table (name, type, default, check);
unknown keys are ignored, as in the trace. Every violation raises ``ReplayConfigError``
naming the key. Relative paths in a config file (``PATH_KEYS``) are read from the file's
folder, so a config works from any current directory; command-line overrides are relative
to the current directory.

The names say "replay": this is litehit's JSON replay config, a different thing from the
server's runtime configuration (``ferrumkv_py.config``: ``ConfigSpec`` rows for CONFIG
GET/SET and redis.conf files, ``ConfigError`` worded as Redis words it).
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any, Callable

DEFAULT_TRACE_BLOCK_SIZE_TOKENS = 256
DEFAULT_PIPELINE_WORKER_COUNT = 1
EVENTS_PER_WORKER_WINDOW = 256          # batch window = pipeline_worker_count * this
NS_PER_SECOND = 1_000_000_000
SUPPORTED_EVICTION_POLICIES = ("lru",)
REQUIRED = object()                     # marker: the key has no default
PATH_KEYS = ("trace_file_path", "output_result_path")


class ReplayConfigError(ValueError):
    """An invalid replay configuration (the message names the key)."""


@dataclass(frozen=True, slots=True)
class ReplayConfigKey:
    """One top-level replay-config key: JSON name, accepted type, default, extra check."""
    name: str
    kind: type
    default: Any
    check: Callable[[Any], bool] | None = None
    rule: str = ""


K = ReplayConfigKey
TOP_LEVEL = (
    K("trace_file_path", str, REQUIRED, lambda v: v != "", "a non-empty string"),
    K("output_result_path", str, REQUIRED, lambda v: v != "", "a non-empty string"),
    K("block_size", int, DEFAULT_TRACE_BLOCK_SIZE_TOKENS, lambda v: v > 0, "positive"),
    K("pipeline_worker_count", int, DEFAULT_PIPELINE_WORKER_COUNT, lambda v: v > 0, "positive"),
    K("fanout_all_instances", bool, False),
    K("override_instance_id", str, ""),
    K("commit_writes", bool, False),
    K("instance_groups", list, REQUIRED, lambda v: len(v) > 0, "a non-empty list"),
    K("instances", list, REQUIRED, lambda v: len(v) > 0, "a non-empty list"),
)


@dataclass(frozen=True, slots=True)
class InstanceConfig:
    """One analysis lane, with its group's settings resolved."""
    instance_id: str
    group_name: str
    block_size_tokens: int          # analysis tokens per block
    block_bytes: int                # byte charge of one block (sum of the full group's specs)
    reblock_factor: int             # block_size_tokens // trace block size (>= 1)
    ttl_ns: int                     # 0 = no TTL
    enable_prefix_hash: bool

    @property
    def variant(self) -> tuple[bool, int]:
        """The key transformation this lane needs: (prefix hash?, re-block factor)."""
        return (self.enable_prefix_hash, self.reblock_factor)


@dataclass(frozen=True, slots=True)
class ReplayConfig:
    """A validated replay configuration."""
    trace_file_path: str
    output_result_path: str
    block_size: int                 # trace-native tokens per block
    pipeline_worker_count: int
    fanout_all_instances: bool
    override_instance_id: str
    commit_writes: bool
    instances: tuple[InstanceConfig, ...]


# ---- field readers ----

def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _typed(obj: dict, key: str, kind: type, where: str, default: Any = REQUIRED) -> Any:
    if key not in obj:
        if default is REQUIRED:
            raise ReplayConfigError(f"{where}: missing required key '{key}'")
        return default
    value = obj[key]
    ok = _is_int(value) if kind is int else (
        isinstance(value, (int, float)) and not isinstance(value, bool) if kind is float
        else isinstance(value, kind))
    if not ok:
        raise ReplayConfigError(f"{where}: '{key}' must be of type {kind.__name__}, got {value!r}")
    return value


def _ttl_ns(group: dict, where: str) -> int:
    ttl_s = _typed(group, "ttl_seconds", float, where, 0)
    if not math.isfinite(ttl_s) or ttl_s < 0:
        raise ReplayConfigError(f"{where}: 'ttl_seconds' must be a finite number >= 0, "
                                f"got {ttl_s!r}")
    return ttl_s * NS_PER_SECOND if _is_int(ttl_s) else round(ttl_s * NS_PER_SECOND)


def _read_groups(raw_groups: list) -> dict[str, tuple[int, bool]]:
    groups: dict[str, tuple[int, bool]] = {}
    for i, group in enumerate(raw_groups):
        where = f"instance_groups[{i}]"
        if not isinstance(group, dict):
            raise ReplayConfigError(f"{where}: must be an object")
        name = _typed(group, "name", str, where)
        if name in groups:
            raise ReplayConfigError(f"{where}: duplicate instance group name {name!r}")
        policy = _typed(group, "eviction_policy", str, where, "lru")
        if policy not in SUPPORTED_EVICTION_POLICIES:
            raise ReplayConfigError(f"{where}: eviction_policy {policy!r} is not supported "
                                    "(only lru)")
        capacities = _typed(group, "capacity_gb", list, where, [])
        if not all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in capacities):
            raise ReplayConfigError(f"{where}: 'capacity_gb' must be a list of numbers")
        groups[name] = (_ttl_ns(group, where),
                        _typed(group, "enable_prefix_hash", bool, where, False))
    return groups


def _block_bytes(inst: dict, where: str) -> int:
    sizes: dict[str, int] = {}
    for spec in _typed(inst, "location_spec_infos", list, where):
        if not isinstance(spec, dict):
            raise ReplayConfigError(f"{where}: location_spec_infos entries must be objects")
        size = _typed(spec, "size", int, where + ".location_spec_infos")
        if size < 0:
            raise ReplayConfigError(f"{where}: location spec size must not be negative, got {size}")
        sizes[_typed(spec, "name", str, where + ".location_spec_infos")] = size
    spec_groups: dict[str, list] = {}
    for group in _typed(inst, "location_spec_groups", list, where):
        if not isinstance(group, dict):
            raise ReplayConfigError(f"{where}: location_spec_groups entries must be objects")
        spec_groups[_typed(group, "name", str, where + ".location_spec_groups")] = _typed(
            group, "spec_names", list, where + ".location_spec_groups")
    state = _typed(inst, "optimizer_state_info", dict, where)
    full = _typed(state, "full_location_spec_group_name", str, where + ".optimizer_state_info")
    if full not in spec_groups:
        raise ReplayConfigError(f"{where}: full location spec group {full!r} is not defined")
    total = 0
    for spec_name in spec_groups[full]:
        if spec_name not in sizes:
            raise ReplayConfigError(f"{where}: location spec {spec_name!r} is not defined")
        total += sizes[spec_name]
    if total <= 0:
        raise ReplayConfigError(f"{where}: block_bytes (sum of the full group's spec sizes) "
                                f"must be positive, got {total}")
    return total


def _read_instance(inst: Any, i: int, groups: dict, trace_block: int) -> InstanceConfig:
    where = f"instances[{i}]"
    if not isinstance(inst, dict):
        raise ReplayConfigError(f"{where}: must be an object")
    instance_id = _typed(inst, "instance_id", str, where)
    if not instance_id:
        raise ReplayConfigError(f"{where}: 'instance_id' must not be empty")
    group_name = _typed(inst, "instance_group_name", str, where)
    if group_name not in groups:
        raise ReplayConfigError(f"{where}: unknown instance group {group_name!r}")
    if _typed(inst, "linear_step", int, where, 0) != 0:
        raise ReplayConfigError(f"{where}: linear_step must be 0 (only full-attention instances "
                                "are supported offline)")
    block_size = _typed(inst, "block_size", int, where)
    if block_size <= 0:
        raise ReplayConfigError(f"{where}: 'block_size' must be positive, got {block_size}")
    if block_size % trace_block != 0:
        raise ReplayConfigError(f"{where}: re-block factor not an integer: block_size {block_size} "
                                f"is not a multiple of the trace block_size {trace_block}")
    ttl_ns, prefix_hash = groups[group_name]
    return InstanceConfig(instance_id, group_name, block_size, _block_bytes(inst, where),
                          block_size // trace_block, ttl_ns, prefix_hash)


def parse_config(obj: Any) -> ReplayConfig:
    """Validate a decoded config JSON object and resolve every instance's lane settings.

    Complexity: O(size of the config).
    """
    if not isinstance(obj, dict):
        raise ReplayConfigError("config: the top level must be a JSON object")
    top: dict[str, Any] = {}
    for spec in TOP_LEVEL:
        value = _typed(obj, spec.name, spec.kind, "config", spec.default)
        if spec.check is not None and not spec.check(value):
            raise ReplayConfigError(f"config: '{spec.name}' must be {spec.rule}, got {value!r}")
        top[spec.name] = value
    if top["fanout_all_instances"] and top["override_instance_id"]:
        raise ReplayConfigError("config: fanout_all_instances and override_instance_id are "
                                "exclusive")
    groups = _read_groups(top.pop("instance_groups"))
    instances = tuple(_read_instance(inst, i, groups, top["block_size"])
                      for i, inst in enumerate(top.pop("instances")))
    seen: set[str] = set()
    for inst in instances:
        if inst.instance_id in seen:
            raise ReplayConfigError(f"config: duplicate instance_id {inst.instance_id!r}")
        seen.add(inst.instance_id)
    override = top["override_instance_id"]
    if override and override not in seen:
        raise ReplayConfigError(f"config: override_instance_id {override!r} is not a configured "
                                "instance")
    return ReplayConfig(instances=instances, **top)


def load_config(path: str, overrides: dict[str, Any] | None = None) -> ReplayConfig:
    """Read a config JSON file; ``overrides`` replace top-level keys (CLI flags).

    Relative ``PATH_KEYS`` values in the file are joined to the file's folder (normalised,
    so ``conf/../out/x`` reads ``out/x``); overrides are taken as given.

    Complexity: O(size of the file).
    """
    try:
        with open(path, "rb") as f:
            obj = json.loads(f.read())
    except OSError as exc:
        raise ReplayConfigError(f"cannot read config {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ReplayConfigError(f"config {path}: bad JSON: {exc}") from None
    if isinstance(obj, dict):
        folder = os.path.dirname(path)
        for key in PATH_KEYS:
            value = obj.get(key)
            if isinstance(value, str) and value and not os.path.isabs(value):
                obj[key] = os.path.normpath(os.path.join(folder, value))
        if overrides:
            obj = {**obj, **{k: v for k, v in overrides.items() if v is not None}}
    return parse_config(obj)
