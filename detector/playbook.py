"""What to recommend for a problem, how to undo it, and which diagnostic to run next.

faultline never acts: every action carries ``requires_approval: true`` and a
rollback line, so an operator (or an orchestrator with a human in the loop)
can approve it knowing how to take it back.

>>> from detector.alerts import Scope
>>> a = action_for("hardware", "gpu_memory", Scope.of_gpu("node-007", 3))
>>> a.name, a.requires_approval
('drain_gpu', True)
>>> next_diagnostic("slow_node", Scope.of_node("node-007"))
'dcgmi diag -r 3 on node-007, then an NCCL all-reduce test between node-007 and a healthy peer'
"""

from __future__ import annotations

from detector.alerts import Action, Scope
from detector.xid import REMAP_PENDING_XID, lookup


def _where(scope: Scope) -> str:
    lv = scope.level
    if lv == "gpu":
        return f"GPU {scope.gpu} on {scope.node}"
    if lv == "nic":
        return f"{scope.nic} port {scope.port or 1} on {scope.node}"
    if lv == "node":
        return str(scope.node)
    if lv == "switch":
        return f"switch {scope.switch}"
    if lv == "domain":
        return f"NVLink domain {scope.domain}"
    if lv == "replica":
        return f"data-parallel replica {scope.dp_rank} of {scope.job}"
    return f"job {scope.job}"


def _uncordon(scope: Scope) -> str:
    node = scope.node or "the node"
    return (f"return {node} to service: `scontrol update nodename={node} state=resume` "
            f"(Slurm) or `kubectl uncordon {node}`")


def action_for(kind: str, cause: str, scope: Scope, *, xid: int | None = None,
               recovery_action: str | None = None, clocks_held: bool = False) -> Action:
    """The recommendation for a problem of this kind and cause on this unit (``clocks_held``:
    a slow GPU's application clocks hold it, correlate.thermal's _impact).

    >>> action_for("slow_node", "power", Scope.of_gpu("n1", 3), clocks_held=True).name
    'reset_clocks'
    """
    where = _where(scope)
    if recovery_action in ("node_reboot", "drain_and_reset"):
        return Action("drain_node", f"NVML asks for {recovery_action} on {where}: drain "
                      f"{scope.node}, then reboot or reset", _uncordon(scope))
    if xid is not None and lookup(xid).action == "drain_node":
        return Action("drain_node", f"XID {xid} ({lookup(xid).meaning}) on {where}: drain "
                      f"{scope.node} and reboot it", _uncordon(scope))
    if kind == "sdc":
        return Action(
            "drain_gpu", f"{where} computed different results from its replicas: restart the "
            "job from the last checkpoint taken before the onset, without this GPU",
            f"return the GPU to service after `dcgmi diag -r 4` passes on {scope.node}")
    if kind == "hardware":
        if xid == REMAP_PENDING_XID and cause == "gpu_memory" and scope.level == "gpu":
            # (a row remap pending, its problem's only verdict: NVIDIA's row-remapping docs --
            # the flag means the remap happens at the next GPU reset, and the running and new
            # work stays correct until then -- so the reset waits for the job: remap32)
            return Action("reset_gpu", f"a row remap is pending on {where} (XID 63 / "
                          "row_remap_pending): the memory stays correct until the GPU's next "
                          "reset activates the remap -- let the running job finish, start no "
                          f"new one on the GPU, then reset it (`nvidia-smi -r -i {scope.gpu}` "
                          f"on {scope.node}); drain it at once if an uncorrectable error or a "
                          "remap failure (XID 64) follows",
                          "no rollback needed for a reset; return the GPU to scheduling once "
                          f"`nvidia-smi -q -d ROW_REMAPPER` on {scope.node} shows no remap "
                          "pending")
        if cause == "nvlink" and scope.level == "node":  # (its NVSwitch baseboard: hw18)
            return Action("drain_node", f"NVLink errors on most GPUs of {where} at once: drain "
                          f"{scope.node}; check the NVSwitch baseboard (fabric manager SXIDs, "
                          "`dcgmi diag -r 3`) before returning it", _uncordon(scope))
        if scope.level == "node":  # (PCIe replays on several of its GPUs at once: p1pcie)
            return Action("drain_node", f"hardware trouble on several GPUs of {where} at once "
                          "(a part they share on the baseboard: a PCIe switch): drain "
                          f"{scope.node}; check its PCIe links (`lspci -vvv`, `nvidia-smi -q -d "
                          "PCIE`) and run `dcgmi diag -r 3` before returning it", _uncordon(scope))
        if cause == "nvlink":
            return Action("reset_gpu", f"NVLink errors on {where}: reset the GPU when the job "
                          "allows, drain the node if errors continue after the reset",
                          f"no rollback needed for a reset; {_uncordon(scope)} if drained")
        return Action("drain_gpu", f"{where}: take the GPU out of scheduling and move the job off "
                      f"{scope.node}; run `dcgmi diag -r 3` before returning it",
                      _uncordon(scope))
    if kind == "network":
        if scope.level == "switch":
            return Action("drain_switch", f"{where}: move jobs off the nodes behind it and check "
                          "the switch (ports, optics, firmware)",
                          f"return the nodes behind {scope.switch} to service once an NCCL "
                          "all-reduce across the leaf runs at line rate")
        if scope.level == "node":
            return Action("drain_node", f"every NIC port of {where} is down: drain it and check "
                          "the node (mlx5 driver and firmware in dmesg, PCIe, NIC power) before "
                          "the cables", _uncordon(scope))
        return Action("check_link", f"{where}: reseat or replace the cable/transceiver; until "
                      "then exclude the port from NCCL (NCCL_IB_HCA) or drain the node",
                      f"re-enable the port; {_uncordon(scope)} if drained")
    if kind == "slow_node":
        if scope.level == "domain" and cause in ("power", "thermal"):
            # (a rack's shared supply or cooling: draining its trays one by one fixes nothing
            # -- detector.domain_brake)
            part = ("power shelves (PSU status, the rack power controller's and BMC logs)"
                    if cause == "power" else "cooling (CDU, coolant flow and temperature)")
            return Action(f"check_rack_{'power' if cause == 'power' else 'cooling'}",
                          f"{where} brakes on most of its trays at once ({cause}): check the "
                          f"rack's {part}; move jobs that cannot run slower off the domain "
                          "rather than draining its trays one by one",
                          f"nothing to roll back until jobs are moved; then return the trays "
                          f"of {scope.domain} to service")
        if cause == "gpu_hardware" and scope.level == "gpu":
            # (a GPU's clock stuck low with no clock-event reason: detector.stuck_clock; or
            # held by HW slowdown, 0x8, with neither heat nor a power limit behind it: its
            # regulator or board -- GpuThermal._own_cause.  A reset re-initialises its clocks
            # and clears any clock setting, the least that can mend it; a GPU still low under
            # load after it is drained for repair.)
            # (revB33 2: locked or application clocks set on this GPU alone show no reason
            # bit in DESIGN's ``throttle`` field, which has no 0x2: looked for first.)
            return Action("reset_gpu", f"{where} runs slow at a clock its own hardware holds "
                          "down (HW slowdown 0x8 with neither heat nor a power limit behind it, "
                          "or a clock nothing reports holding): "
                          f"first see whether a clock setting holds it (`nvidia-smi -q -d CLOCK "
                          f"-i {scope.gpu}` on {scope.node}: application or locked clocks below "
                          f"its node's other GPUs'; if so clear them, `nvidia-smi -rgc -i "
                          f"{scope.gpu}` and `nvidia-smi -rac -i {scope.gpu}`, and watch its "
                          "rank); otherwise move the job off it (restart from the last "
                          "checkpoint without it), reset it "
                          f"(`nvidia-smi -r -i {scope.gpu}` on {scope.node}) and "
                          "check its clock under load against its node's other GPUs "
                          f"(`dcgmi diag -r 3`, `nvidia-smi -q -d CLOCK`); drain it for repair "
                          "if still low", "no rollback needed for a reset; return the GPU to "
                          "scheduling once its clock under load matches its node's other "
                          f"GPUs; {_uncordon(scope)} if drained")
        if cause == "software" and scope.level in ("node", "gpu"):
            # (busy GPUs at a clock a setting holds -- application or locked clocks, no
            # clock-event reason: Correlator._held_by_setting.  Resetting them stops nothing.)
            gpu = "" if scope.gpu is None else f" -i {scope.gpu}"
            return Action("reset_clocks", f"{where} runs busy at a clock held by a setting "
                          "(application or locked clocks, no power or heat reason): check "
                          f"`nvidia-smi -q -d CLOCK{gpu}` on {scope.node}, reset them "
                          f"(`nvidia-smi -rgc{gpu}`, `nvidia-smi -rac{gpu}`) and see its ranks "
                          "back at their peers' pace; if still low, move the job off "
                          f"{scope.node} and run `dcgmi diag -r 3`",
                          "re-apply the previous clock settings (`nvidia-smi -lgc` / `-ac`) "
                          "if they were wanted; nothing else was changed")
        if clocks_held and scope.level in ("node", "gpu"):
            # (0x2 on one GPU, its mates free: a power profile's or a tool's application
            # clocks left on it -- resetting them mends it under the running job; blind33 F3)
            # (on two GPUs or more of a node, the job's other nodes free of them: the
            # node's setting -- revA44 F4)
            gpu = "" if scope.gpu is None else f" -i {scope.gpu}"
            held = ("its node's other GPUs free of them" if scope.gpu is not None else
                    "the job's other GPUs free of them")
            return Action("reset_clocks", f"{where} runs slow at the clock its application "
                          f"clocks hold (clock-event reason 0x2, {held}): reset them "
                          "(`nvidia-smi -rac"
                          f"{gpu}` on {scope.node}; the job's power profile re-applied if it "
                          "set them) and see its ranks back at their peers' pace; if still "
                          f"slow, move the job off {scope.node} and run `dcgmi diag -r 3`",
                          "re-apply the application clocks (`nvidia-smi -ac`) if they were "
                          "wanted; nothing else was changed")
        if scope.level == "replica":
            return Action("isolate_replica", f"{where} is slow: restart the job without this "
                          "replica (or redistribute its micro-batches)",
                          f"re-admit replica {scope.dp_rank} at the next restart")
        detail = {"thermal": "thermal throttling", "power": "power throttling"}.get(
            cause, "a persistent slowdown")
        return Action("drain_node", f"{where} shows {detail}: move the job off {scope.node} and "
                      "check cooling/power", _uncordon(scope))
    return Action("investigate", f"{where}: no automatic recommendation",
                  "nothing was changed")


# How much an action takes out of service, least first: an open isolation whose action comes
# to reach further fires again with it (detector.correlate).  ``restart_job`` and ``none``
# (the XID catalogue's) are never a problem's action.
_REACH = {"investigate": 0, "reset_clocks": 1, "reset_gpu": 1, "check_link": 1,
          "check_rack_power": 1, "check_rack_cooling": 1, "drain_gpu": 2,
          "isolate_replica": 3, "drain_node": 3, "drain_switch": 4}


def reach(action: str) -> int:
    """The rank of ``action`` in how much it takes out.

    >>> reach("drain_node") > reach("drain_gpu") > reach("reset_gpu")
    True
    """
    return _REACH.get(action, 0)


def clock_diagnostic(scope: Scope, clock_mhz: float) -> str:
    """For a slow escalation whose GPUs run busy at a clock held low with no clock-event
    reason (application or locked clocks): what an operator checks and resets.

    >>> clock_diagnostic(Scope.of_node("n1"), 1395.0).split(";")[0]
    '`nvidia-smi -q -d CLOCK` on n1: SM clock 1395 MHz against the application and max clocks'
    """
    node = scope.node or "the nodes"
    return (f"`nvidia-smi -q -d CLOCK` on {node}: SM clock {clock_mhz:g} MHz against the "
            "application and max clocks; if application or locked clocks hold it, reset them "
            "(`nvidia-smi -rac`, `nvidia-smi -rgc`) and see the ranks back at their peers' "
            f"pace; otherwise `dcgmi diag -r 3` on {node}")


def next_diagnostic(kind: str, scope: Scope) -> str:
    """For an escalation: the diagnostic that best separates the remaining explanations."""
    if scope.level in ("gpu", "node"):
        node = scope.node
        if kind == "hardware":
            return (f"hardware inspection of {_where(scope)}: it keeps failing after resets; "
                    f"`nvidia-bug-report.sh` and `dcgmi diag -r 4` on {node}, then RMA")
        if kind == "sdc":
            return (f"rerun the failing step on another GPU (Megatron rerun state machine); "
                    f"`dcgmi diag -r 4` on {node}")
        return (f"dcgmi diag -r 3 on {node}, then an NCCL all-reduce test between {node} and a "
                "healthy peer")
    if scope.level == "nic":
        return f"ib_write_bw between {scope.node}:{scope.nic} and a peer on the same leaf"
    if scope.level == "switch":
        return f"NCCL all-reduce test across the nodes behind {scope.switch}"
    if scope.level == "replica":
        return (f"dcgmi diag -r 3 on the nodes of replica {scope.dp_rank}, then an NCCL test "
                "inside the replica")
    return (f"compare step timings of {scope.job} against its last healthy run; "
            "check the data loader")
