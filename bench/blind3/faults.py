"""Fault and healthy-event hooks: each installs callables on a Fleet (see model.py)."""

from __future__ import annotations

from bench.blind3.model import Fault, Fleet


def _ramp(
    t: float, t0: float, rise_s: float, t1: float = float("inf"), fall_s: float = 1.0
) -> float:
    """0 before t0, linear to 1 over rise_s, 1 until t1, linear back to 0 over fall_s."""
    if t < t0:
        return 0.0
    up = min(1.0, (t - t0) / rise_s)
    if t <= t1:
        return up
    return max(0.0, up * (1.0 - (t - t1) / fall_s))


def _ecc_rate(
    fl: Fleet,
    f: Fault,
    node: str,
    gpu: int,
    t0: float,
    t1: float,
    fld: str,
    per_s: float,
    busy_only: bool = False,
) -> None:
    """One GPU's counter ``fld`` climbing at ``per_s`` over [t0, t1) (only while busy)."""

    def rate(nd, g, t):
        if nd == node and g == gpu and t0 <= t < t1 and (not busy_only or fl.job_on(nd, g, t)):
            return fld, per_s, f
        return None

    fl.ecc_rate.append(rate)


def host_slow(
    fl: Fleet, f: Fault, node: str, t0: float, t1: float, compute: float, neither_share: float
):
    """The host's CPU / input path slows: every rank of the node arrives late, GPUs look fine."""
    jobs = {j.job: j for j in fl.jobs}

    def c(nd, g, t, step):
        if nd == node and t0 <= t < t1:
            return compute, f
        return None

    def n(nd, g, t, step):
        if nd == node and t0 <= t < t1:
            job = jobs.get(fl.job_on(nd, g, t))
            if job is not None:
                return job.compute_ms * job.accum * neither_share, f
        return None

    fl.compute_slow.append(c)
    fl.neither_extra.append(n)


def intermittent(
    fl: Fleet,
    f: Fault,
    node: str,
    gpu: int,
    t0: float,
    t1: float,
    every: int,
    phase: int,
    factor: float,
):
    """One GPU slow on one step in ``every`` (nothing in telemetry says why)."""

    def c(nd, g, t, step):
        if nd == node and g == gpu and t0 <= t < t1 and step % every == phase:
            return factor, f
        return None

    fl.compute_slow.append(c)


def pcie_downtrained(
    fl: Fleet,
    f: Fault,
    node: str,
    gpu: int,
    t0: float,
    t1: float,
    neither_share: float,
    comm: float,
    replay_per_s: float,
):
    """A GPU's PCIe link trained down: host copies slow on its rank, the job's collectives
    (GPUDirect RDMA through the same switch) slower for all, PCIe replays climbing."""
    jobs = {j.job: j for j in fl.jobs}

    def n(nd, g, t, step):
        if nd == node and g == gpu and t0 <= t < t1:
            job = jobs.get(fl.job_on(nd, g, t))
            if job is not None:
                return job.compute_ms * job.accum * neither_share, f
        return None

    def cm(job, t):
        if t0 <= t < t1 and fl.job_on(node, gpu, t) == job:
            return comm, f
        return None

    fl.neither_extra.append(n)
    fl.comm_slow.append(cm)
    _ecc_rate(fl, f, node, gpu, t0, t1, "pcie_replay", replay_per_s, busy_only=True)


def nvlink_flap(
    fl: Fleet,
    f: Fault,
    node: str,
    gpu: int,
    t0: float,
    dur_s: float,
    xids: list,
    comm_job: str | None,
    comm: float,
):
    """One GPU's NVLink retrains: CRC and replay counts, a recovery, XID 74; NCCL traffic
    over it retransmits, so every rank of the job waits a little longer in collectives."""
    t1 = t0 + dur_s

    _ecc_rate(fl, f, node, gpu, t0, t1 + 5, "nvlink_crc_errors", 25.0)
    _ecc_rate(fl, f, node, gpu, t0, t1 + 5, "nvlink_replay_errors", 4.0)
    for i, dt in enumerate(xids):
        fl.ecc_events.append(
            (node, gpu, t0 + dt, 74, {"nvlink_recovery_errors": 1} if i == 0 else {}, f)
        )
    if comm_job is not None:

        def cm(job, t):
            if job == comm_job and t0 <= t < t1:
                return comm, f
            return None

        fl.comm_slow.append(cm)


def remap_storm(
    fl: Fleet,
    f: Fault,
    node: str,
    gpu: int,
    t0: float,
    n63: int,
    spread_s: float,
    fail_at: float | None,
    sbe_per_s: float,
):
    """A row-remap storm: SBEs climb, XID 92, a run of XID 63 (remap pending until a GPU
    reset), optionally XID 64 (remap failed, reset required)."""
    fl.ecc_events.append((node, gpu, t0, 92, {}, f))
    for i in range(n63):
        fl.ecc_events.append((node, gpu, t0 + 3.0 + spread_s * i / max(1, n63 - 1), 63, {}, f))
    t_pending = t0 + 3.0

    def state(nd, g, t):
        if nd == node and g == gpu and t >= t_pending:
            st = {"row_remap_pending": True}
            if fail_at is not None and t >= fail_at:
                st.update(row_remap_failure=True, recovery_action="gpu_reset")
            return st, f
        return None

    _ecc_rate(fl, f, node, gpu, t0 - 20, t0 + spread_s + 10, "sbe_volatile", sbe_per_s)
    fl.ecc_state.append(state)
    if fail_at is not None:
        fl.ecc_events.append(
            (node, gpu, fail_at, 64, {"row_remap_failure": True, "recovery_action": "gpu_reset"}, f)
        )


def fell_off_bus(fl: Fleet, f: Fault, node: str, gpu: int, t0: float, poll_s: float):
    """XID 79: the GPU is gone; DCGM returns nothing for it after the event's poll."""
    fl.ecc_events.append((node, gpu, t0, 79, {}, f))
    fl.dcgm_gone.append((node, gpu, t0 + poll_s + 0.5, fl.duration_s + 1))


def hot_gpu(fl: Fleet, f: Fault, node: str, gpu: int, t0: float, rise_s: float, extra_c: float):
    """A thermal-interface failure: one GPU heats up and stays hot (throttles past its limit)."""

    def h(nd, g, t):
        if nd == node and g == gpu:
            d = extra_c * _ramp(t, t0, rise_s)
            if d >= 0.5:
                return d, f
        return 0.0, None

    fl.temp_extra.append(h)


def rack_cooling(
    fl: Fleet,
    rack: str,
    node_share: dict,
    t0: float,
    rise_s: float,
    t1: float,
    fall_s: float,
    extra_c: float,
    faults: dict,
):
    """A rack's cooling fails: inlet air warms (more at the top); ``faults`` maps the nodes
    whose GPUs end up throttling to their label (filled after a probe, see story.py)."""

    def h(rk, nd, t):
        if rk != rack or nd not in node_share:
            return 0.0, None
        d = extra_c * node_share[nd] * _ramp(t, t0, rise_s, t1, fall_s)
        if d < 0.5:
            return 0.0, None
        return d, faults.get(nd)

    fl.inlet_extra.append(h)


def power_cap(fl: Fleet, nodes: set, t0: float, t1: float, cap_w: float):
    """A facility power cap on a rack (healthy: every GPU of every job there equally)."""

    def c(nd, g, t):
        if nd in nodes and t0 <= t < t1:
            return cap_w
        return None

    fl.power_cap.append(c)


def driver_reload(fl: Fleet, node: str, t0: float, gap_s: float):
    """Driver reload on an idle node: DCGM silent for a while, volatile counters back to 0."""
    fl.dcgm_gone.append((node, None, t0, t0 + gap_s))
    fl.dcgm_reset.append((node, t0 + gap_s))


def exporter_restart(fl: Fleet, node: str, t0: float, gap_s: float):
    """The NIC exporter restarts and reports counts since its own start (back to 0)."""
    fl.nic_gap.append((node, t0, t0 + gap_s))
    fl.nic_reset.append((node, t0 + gap_s))
