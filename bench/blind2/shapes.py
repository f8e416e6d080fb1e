"""The two clusters blind2 generates on, and their topology records.

`superpod`: an H100 SuperPOD-like fabric, two scalable units of 16 DGX nodes;
each node's eight compute ports sit on eight rails, one rail leaf per rail per
unit (port k of every node of a unit on `suU-railK`), spines over all rail
leaves. The compute ports carry DGX H100's real device names (mlx5_0, 3-6,
9-11); two storage ports (mlx5_7, mlx5_8) face a storage network that is not
in the compute topology. InfiniBand counters; XIDs come from the kernel log
(an event message at the XID's time). Written in the project's topology format.

`nvl72`: three GB200 NVL72-like racks, 18 compute trays of 4 GPUs each, one
NVLink domain a rack; a RoCE fabric with Grace-style netdev names, two
top-of-rack leaves a rack (trays 1-9 and 10-18), one spine. Written as a Slurm
topology.conf (tree lines and block lines), as a site would hand it over.
XIDs come from polling DCGM (on the next poll).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Node:
    name: str
    gpus: int
    nics: tuple[str, ...]          # compute ports, GPU k nearest nics[k * len // gpus]
    storage_nics: tuple[str, ...]
    rack: str
    domain: str | None
    nic_switch: dict[str, str]     # compute port -> the leaf it faces
    inlet_c: float                 # air or coolant inlet temperature
    dcgm_s: float = 10.0           # collector cadence (ECC and thermal)
    nic_s: float = 10.0
    phase_s: float = 0.0

    def nic_of_gpu(self, gpu: int) -> str:
        return self.nics[gpu * len(self.nics) // self.gpus]


@dataclass
class Shape:
    name: str
    cluster: str
    nodes: list[Node]
    fabric: str                    # "ib" or "roce"
    port_gbps: float
    tdp_w: float
    idle_w: float
    peak_w: float                  # demand at full load, before the cap
    max_clock_mhz: float
    r_th: float                    # degrees C per W, die over inlet
    xid_from_kernel_log: bool
    topology_format: str
    topology_text: str
    switches: list[str] = field(default_factory=list)
    domains: list[str] = field(default_factory=list)

    def node(self, name: str) -> Node:
        return self._by_name[name]

    def __post_init__(self) -> None:
        self._by_name = {n.name: n for n in self.nodes}


DGX_COMPUTE = ("mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11")
DGX_STORAGE = ("mlx5_7", "mlx5_8")
GRACE_NICS = ("enP6p3s0f0np0", "enP6p3s0f1np1", "enP22p3s0f0np0", "enP22p3s0f1np1")


def superpod() -> Shape:
    nodes = []
    for su in (1, 2):
        for i in range(1, 17):
            name = f"su{su}-dgx{i:02d}"
            rack_no = (i - 1) // 4 + 1       # 4 DGX (~10 kW each) a rack
            pos = (i - 1) % 4                # height in the rack: hotter at the top
            nodes.append(Node(
                name=name, gpus=8, nics=DGX_COMPUTE, storage_nics=DGX_STORAGE,
                rack=f"su{su}-r{rack_no}", domain=None,
                nic_switch={nic: f"su{su}-rail{k}" for k, nic in enumerate(DGX_COMPUTE)},
                inlet_c=22.0 + 1.8 * pos + 0.6 * rack_no))
    lines = [
        "# blind2 superpod: 2 scalable units x 16 DGX H100, rail-optimised (8 rails a unit)",
        "Topology=sp-h100-256 Version=1",
        "NodeSet=su[1-2]-dgx[01-16] Gpus=8 Nics=mlx5_[0,3-6,9-11],mlx5_[7-8]"
        " GpuNics=mlx5_[0,3-6,9-11]",
    ]
    for su in (1, 2):
        lines.append(f"Rack=su{su}-r[1-4] Nodes=su{su}-dgx[01-16]")
    switches = []
    for su in (1, 2):
        for k, nic in enumerate(DGX_COMPUTE):
            lines.append(f"SwitchName=su{su}-rail{k} Nodes=su{su}-dgx[01-16] Nics={nic}")
            switches.append(f"su{su}-rail{k}")
    lines.append("SwitchName=spine[1-4] Switches=su[1-2]-rail[0-7]")
    return Shape(
        name="superpod", cluster="sp-h100-256", nodes=nodes, fabric="ib", port_gbps=400.0,
        tdp_w=700.0, idle_w=72.0, peak_w=745.0, max_clock_mhz=1980.0, r_th=0.062,
        xid_from_kernel_log=True, topology_format="faultline",
        topology_text="\n".join(lines) + "\n", switches=switches)


def nvl72() -> Shape:
    nodes = []
    for r in (1, 2, 3):
        for c in range(1, 19):
            name = f"nvl{r}-c{c:02d}"
            leaf = f"leaf{r}-{1 if c <= 9 else 2}"
            # coolant warms along the manifold: the last tray sees ~5 C more
            nodes.append(Node(
                name=name, gpus=4, nics=GRACE_NICS, storage_nics=(), rack=f"nvl{r}",
                domain=f"nvl{r}", nic_switch={nic: leaf for nic in GRACE_NICS},
                inlet_c=29.0 + 0.3 * (c - 1) + 0.7 * r))
    lines = ["# blind2 nvl72: 3 GB200 NVL72-like racks; blocks are NVLink domains"]
    for r in (1, 2, 3):
        lines.append(f"BlockName=nvl{r} Nodes=nvl{r}-c[01-18]")
    lines.append("BlockSizes=18")
    switches = []
    for r in (1, 2, 3):
        lines.append(f"SwitchName=leaf{r}-1 Nodes=nvl{r}-c[01-09] LinkSpeed=400")
        lines.append(f"SwitchName=leaf{r}-2 Nodes=nvl{r}-c[10-18] LinkSpeed=400")
        switches += [f"leaf{r}-1", f"leaf{r}-2"]
    lines.append("SwitchName=spine1 Switches=" + ",".join(switches))
    return Shape(
        name="nvl72", cluster="gb-nvl72-216", nodes=nodes, fabric="roce", port_gbps=400.0,
        tdp_w=1200.0, idle_w=160.0, peak_w=1240.0, max_clock_mhz=1965.0, r_th=0.024,
        xid_from_kernel_log=False, topology_format="slurm",
        topology_text="\n".join(lines) + "\n", switches=switches,
        domains=["nvl1", "nvl2", "nvl3"])


SHAPES = {"superpod": superpod, "nvl72": nvl72}

# collector cadence profiles: (share of nodes, dcgm_s, nic_s); nodes are assigned in
# an interleaved order so every rack and job mixes cadences
CADENCES = {
    "mixed-30-10": ((0.5, 30.0, 30.0), (0.5, 10.0, 10.0)),
    "mixed-30-5": ((0.6, 30.0, 15.0), (0.4, 5.0, 5.0)),
    "fast-5": ((1.0, 5.0, 5.0),),
    "slow-30": ((1.0, 30.0, 30.0),),
}


def assign_cadence(shape: Shape, profile: str, rng) -> None:
    """Give each node a collector cadence and a phase (spread, not aligned)."""
    parts = CADENCES[profile]
    order = list(range(len(shape.nodes)))
    rng.shuffle(order)
    k = 0
    for share, dcgm_s, nic_s in parts:
        count = round(share * len(order)) if share < 1.0 else len(order)
        for idx in order[k:k + count]:
            node = shape.nodes[idx]
            node.dcgm_s, node.nic_s = dcgm_s, nic_s
            node.phase_s = rng.uniform(0.0, dcgm_s)
        k += count
    for idx in order[k:]:
        node = shape.nodes[idx]
        node.dcgm_s, node.nic_s = parts[-1][1], parts[-1][2]
        node.phase_s = rng.uniform(0.0, node.dcgm_s)
