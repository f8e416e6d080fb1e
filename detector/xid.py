"""The XID catalogue: which XID codes mean hardware, what they point at, and what to do.

From DESIGN.md and NVIDIA's XID catalogue (REFERENCE.md): hardware codes are
acted on; the application's codes (13, 31, 43, 45) are evidence, not a verdict.
63 ("row remapper: new row marked for remapping, reset GPU to activate") is acted on
as DESIGN lists it, with the least remedy: a reset at the job's end (detector.playbook;
NVIDIA's IGNORE means the running work is safe, not that the remap needs no reset).

>>> XID_CATALOG[48].cause, XID_CATALOG[48].hardware
('gpu_memory', True)
>>> XID_CATALOG[13].hardware
False
>>> lookup(9999).meaning
'unknown XID'
"""

from __future__ import annotations

from typing import NamedTuple


class XidInfo(NamedTuple):
    code: int
    meaning: str
    hardware: bool        # act on it (True) or keep it as evidence (False)
    cause: str            # contract cause it points at
    action: str           # recommended action name (see detector.playbook)


XID_CATALOG: dict[int, XidInfo] = {x.code: x for x in (
    XidInfo(13, "graphics engine exception", False, "software", "restart_job"),
    XidInfo(31, "GPU memory page fault", False, "software", "restart_job"),
    XidInfo(43, "GPU stopped processing", False, "software", "restart_job"),
    XidInfo(45, "preemptive cleanup", False, "software", "restart_job"),
    XidInfo(48, "double-bit ECC error", True, "gpu_memory", "drain_gpu"),
    XidInfo(61, "PMU breakpoint", True, "gpu_hardware", "reset_gpu"),
    XidInfo(62, "PMU halt", True, "gpu_hardware", "reset_gpu"),
    XidInfo(63, "row remap pending: a row marked for remapping, a GPU reset activates it",
            True, "gpu_memory", "reset_gpu"),
    XidInfo(64, "row remap failure", True, "gpu_memory", "drain_gpu"),
    XidInfo(74, "NVLink error", True, "nvlink", "reset_gpu"),
    XidInfo(79, "GPU fell off the bus", True, "gpu_hardware", "drain_node"),
    XidInfo(92, "high single-bit ECC rate", True, "gpu_memory", "drain_gpu"),
    XidInfo(94, "contained ECC error", True, "gpu_memory", "reset_gpu"),
    XidInfo(95, "uncontained ECC error", True, "gpu_memory", "drain_gpu"),
    XidInfo(119, "GSP RPC timeout", True, "gpu_hardware", "reset_gpu"),
    XidInfo(120, "GSP error", True, "gpu_hardware", "reset_gpu"),
    XidInfo(140, "unrecovered ECC error", True, "gpu_memory", "reset_gpu"),
    # NVLink5 (Blackwell: B100/B200/GB200), NVIDIA's catalogue, resolution WORKFLOW_NVLINK5_ERR:
    # the action hangs on the sub-code and error status in the message text, which the
    # contract's `xid` does not carry.  Acted on where the catalogue's decode has fatal
    # hardware rows that say RESET_GPU (as for XID 74); 147 and 148 decode to IGNORE in every
    # row (software, "not in production code") and stay evidence.
    XidInfo(144, "NVLink5 SAW error", True, "nvlink", "reset_gpu"),
    XidInfo(145, "NVLink5 RLW error", True, "nvlink", "reset_gpu"),
    XidInfo(146, "NVLink5 TLW error", True, "nvlink", "reset_gpu"),
    XidInfo(147, "NVLink5 TREX error", False, "nvlink", "none"),
    XidInfo(148, "NVLink5 NVLPW_CTRL error", False, "nvlink", "none"),
    XidInfo(149, "NVLink5 NETIR error (link fatal / link down)", True, "nvlink", "reset_gpu"),
    XidInfo(150, "NVLink5 MSE error", True, "nvlink", "reset_gpu"),
    XidInfo(154, "recovery action required", True, "gpu_hardware", "reset_gpu"),
)}


# XID 63, and the ``row_remap_pending`` flag that says the same: the remap waits for a GPU
# reset, the memory stays correct until then (error containment and dynamic page
# blacklisting).  Its page recommends the reset at the job's end (detector.playbook).
REMAP_PENDING_XID = 63


def lookup(code: int) -> XidInfo:
    """Catalogue entry; an unknown code is kept as evidence, never acted on alone."""
    return XID_CATALOG.get(code) or XidInfo(code, "unknown XID", False, "unknown", "none")
