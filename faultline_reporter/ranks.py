"""Where this process sits: rank, local GPU, node, and its tensor/pipeline/data-parallel ranks.

>>> p = placement_from_env({"RANK": "13", "LOCAL_RANK": "5", "WORLD_SIZE": "32",
...                         "FAULTLINE_TP_SIZE": "4", "FAULTLINE_PP_SIZE": "2"}, node="n1")
>>> p.rank, p.gpu, p.node, p.tp_rank, p.dp_rank, p.pp_rank
(13, 5, 'n1', 1, 3, 0)
>>> placement_from_env({"RANK": "3"}, node="n1").tp_rank is None   # pure data parallelism
True
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from typing import NamedTuple


class Placement(NamedTuple):
    rank: int
    gpu: int
    node: str
    tp_rank: int | None = None
    pp_rank: int | None = None
    dp_rank: int | None = None


def _int(env: Mapping[str, str], *names: str) -> int | None:
    for name in names:
        v = env.get(name)
        if v not in (None, ""):
            try:
                return int(v)
            except ValueError:
                return None
    return None


def _megatron() -> tuple[int, int, int] | None:
    """(tp, pp, dp) ranks from Megatron-Core's parallel_state, when it is imported and set up."""
    import sys

    ps = sys.modules.get("megatron.core.parallel_state")
    if ps is None:
        return None
    try:
        if not ps.model_parallel_is_initialized():
            return None
        return (ps.get_tensor_model_parallel_rank(), ps.get_pipeline_model_parallel_rank(),
                ps.get_data_parallel_rank())
    except Exception:  # an API change must not stop the training
        return None


def placement_from_env(env: Mapping[str, str] | None = None, *, node: str | None = None
                       ) -> Placement:
    """This process's placement from torchrun / Slurm variables and Megatron, when present.

    With tensor and pipeline sizes (``FAULTLINE_TP_SIZE``, ``FAULTLINE_PP_SIZE``, or
    ``TP_SIZE``/``PP_SIZE``) and ``WORLD_SIZE``, ranks follow Megatron's default order
    (``tp-cp-ep-dp-pp``, context/expert parallelism 1): tensor fastest, pipeline slowest.
    """
    env = os.environ if env is None else env
    rank = _int(env, "RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK") or 0
    gpu = _int(env, "LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK") or 0
    host = node or env.get("FAULTLINE_NODE") or socket.gethostname()
    mg = _megatron()
    if mg is not None:
        return Placement(rank, gpu, host, *mg)
    tp = _int(env, "FAULTLINE_TP_SIZE", "TP_SIZE")
    pp = _int(env, "FAULTLINE_PP_SIZE", "PP_SIZE")
    world = _int(env, "WORLD_SIZE", "SLURM_NTASKS")
    if not tp and not pp:
        return Placement(rank, gpu, host)
    tp, pp = tp or 1, pp or 1
    if not world or world % (tp * pp):
        return Placement(rank, gpu, host)
    dp = world // (tp * pp)
    return Placement(rank, gpu, host, rank % tp, rank // (tp * dp), (rank // tp) % dp)
