"""Every tunable number of the detection engine, in one frozen object.

Defaults are the tuned values (see BENCHMARKS.md for how they were measured);
units are in the names.  The service reads overrides from its settings; the
engine never reads the environment itself.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any


@dataclass(frozen=True)
class Thresholds:
    """Detection thresholds and windows."""

    # Input disorder the contract allows; a step waits this long for missing ranks.
    lateness_s: float = 5.0
    straggler_wait_s: float = 0.5       # a step missing only a straggler waits this long
    straggler_share: float = 0.01       # "only a straggler": up to this share of ranks (>= 1)

    # Slow ranks (peer comparison of compute_ms, robust CUSUM per rank).
    slow_k: float = 1.0                 # CUSUM allowance, in noise units
    slow_h: float = 10.0                # CUSUM alarm level
    slow_z_clip: float = 4.0            # one step adds at most z_clip - k
    slow_clear_steps: int = 5           # healthy steps (score 0) before a slow rank clears
    job_stopped_steps: float = 10.0     # no step for this many step periods: the job stopped,
    #                                     and its slow ranks are retracted (nothing confirms them)
    slow_sigma_floor: float = 0.005     # noise floor of log(compute ratio): 0.5 %
    slow_sigma_alpha: float = 0.05      # smoothing of the job's noise scale across steps
    slow_baseline_alpha: float = 0.02   # learning rate of each rank's own bias against peers
    slow_baseline_clip: float = 0.02    # a slowness beyond 2 % is never learned as normal
    slow_min_effect: float = 0.025      # and the run must average >= 2.5 % slower than peers,
    slow_effect_z: float = 2.5          # this many standard errors of its mean clear of it
    replica_noise_ratio: float = 3.0    # replicas' medians spread this times more than ranks
    #                                     around them (per-step batch imbalance): a rank is
    #                                     also scored against its replica (0: never)
    replica_noise_exit: float = 2.0     # and the regime is left only below this (hysteresis)
    start_offset_max: float = 0.10      # a rank's offset from the job's start, up to this, is
    #                                     learned as its normal (reported, never paged)
    warmup_steps: int = 10              # steps after a (re)start used mostly for learning;
    gross_slowdown: float = 0.30        # meanwhile a rank this much slower than its peer median
    gross_steps: int = 2                # for this many steps in a row is reported at once
    gross_escalate_after_s: float = 1.0  # and waits this long (not escalate_after_s) for a cause
    min_peers: int = 3                  # smaller peer groups are not compared
    # A recurring straggler (slow on a fixed share of steps, fine between: the CUSUM clips
    # each step and drains between them): a decayed per-rank count of steps on which the rank
    # is its group's clear outlier (z >= slow_z_clip and >= slow_recur_min slower than its
    # peers over its learned bias) reaching slow_recur_count, and slow_recur_ratio times the
    # other ranks' mean count (a workload that makes any rank the outlier now and then
    # raises every rank's count alike).
    slow_recur_min: float = 0.10
    slow_recur_half_life_steps: float = 100.0
    slow_recur_count: float = 8.0       # one step in five: ~46 steps; one in ten: ~110
    slow_recur_ratio: float = 4.0
    slow_recur_clear: float = 1.0       # and clears when the count decays below this
    # Host time (a rank's step_ms - compute_ms - comm_ms: host copies, data loading, CPU,
    # PCIe) above its stage's median, in shares of the stage's median busy time
    # (step_ms - comm_ms), fed to a second robust CUSUM (slow_k, slow_h, slow_z_clip):
    # a rank late by its host path while its compute is normal (detector.steps
    # JobMonitor._check_host).
    host_min_effect: float = 0.04       # the run must average >= 4 % of a step's work late
    host_offset_max: float = 0.03       # a host offset up to this is learned as the rank's own
    host_sigma_floor: float = 0.005     # noise floor of the host excess: 0.5 % of a step's work
    host_hold_s: float = 180.0          # and the run must have lasted this long: the one
    #                                     cause telemetry can name, a PCIe replay rate
    #                                     (gpu_health), takes 6 DCGM samples (30 s apart)
    host_page_s: float = 600.0          # a host_late run lasting this long (from its onset) is
    #                                     escalated to a human, never isolated (correlate
    #                                     Correlator._host_lasting): longer than an input pipeline
    #                                     catching up (blind2's healthy stall: 3 minutes)
    host_node_page_s: float = 240.0     # ... and this long for ranks two or more of whose node's
    #                                     ranks are late alike (the host they share: its memory,
    #                                     CPUs, page cache): longer than blind2's healthy stall
    #                                     of one node's input pipeline (3 min; its runs 198-203 s
    #                                     from onset to clear, seeds 0..3), shorter than blind7
    #                                     G5's host under memory pressure (4-6 min; runs 282-376
    #                                     s, seeds 0..7; its job's mean step +10 %, median +2.5 %).
    #                                     One rank alone keeps host_page_s (a loader's shard).

    # SDC: checksum vote and grad_norm outliers across replicas.
    grad_z: float = 6.0                 # robust z of log(grad_norm) that counts as a spike
    grad_scale_floor: float = 0.1       # floor of the robust spread of log(grad_norm)
    grad_half_life_steps: float = 50.0
    checksum_clear_steps: int = 5       # agreeing steps before a checksum mismatch clears

    # GPU health (ECC / XID / interconnect counters).
    sbe_burst: float = 100.0            # single-bit errors within ~a half-life
    sbe_half_life_s: float = 300.0
    # ... a corrected-error rate climbing (GpuHealth._sbe_climbing, models.rising): bins of at
    # least a minute's polls (at DCGM's 60 s ECC poll, one) cut at the counter's changes, the
    # run's first left out; sbe_rise_bins (with sbe_burst errors in them) each sbe_rise_step x
    # and a standard error above the one before, the last sbe_rise_z above the first,
    # sbe_rise_history x the GPU's rate before (an hour's half-life).
    sbe_rise_bin_s: float = 50.0
    sbe_rise_bins: int = 3
    sbe_rise_step: float = 1.25
    sbe_rise_step_z: float = 1.0
    sbe_rise_z: float = 3.0
    sbe_rise_history: float = 10.0
    sbe_history_half_life_s: float = 3600.0
    retired_sbe_pages: int = 10         # as Meta GCM's gpu_retired_pages check
    nvlink_errors: float = 50.0         # CRC + replay + recovery errors within ~a half-life
    nvlink_half_life_s: float = 60.0
    nvlink_replayed: float = 10.0       # ... or this many with a replay/recovery among them
    pcie_replays: float = 100.0
    pcie_half_life_s: float = 60.0
    # ... or a replay *rate* held for minutes (a link trained down: replays on every sample
    # while busy, 10-60/min): DCGM's PCIe health watch flags > 8 replays/min
    # (DCGM_LIMIT_MAX_PCIREPLAY_RATE).  Raised when the rate estimated from a count decaying
    # over pcie_rate_half_life_s passes it (~58 replays lately), with replays on
    # >= pcie_rate_samples samples (decayed alike: a lone burst is the rule above's).
    pcie_rate_per_min: float = 8.0
    pcie_rate_half_life_s: float = 300.0
    pcie_rate_samples: float = 6.0
    pcie_evidence: float = 8.0          # replays counted with pcie_half_life_s (DCGM's 8/min,
    #                                     within about a minute): evidence (gpu_health's
    #                                     ``pcie_seen``), a cause for a rank -- or its node's
    #                                     TP group -- slow meanwhile, never a page on its own
    #                                     (healthy GPUs trickle 0-20 an hour)
    hw_quiet_s: float = 60.0            # a rate signal clears after this long without errors

    # Thermal and power throttling.
    clock_drop: float = 0.05            # SM clock below its own baseline by this share ...
    throttle_samples: int = 3           # ... for this many samples in a row, with a reason set
    hw_clock_drop: float = 0.015        # the same for reasons that are never routine (HW thermal,
    #                                     HW slowdown, SW thermal, HW power brake)
    cap_clock_drop: float = 0.10        # a SW power cap holding the clock this low (beyond
    #                                     routine capping at TDP, a few % to ~10 %) ...
    cap_samples: float = 10.0           # ... for this many samples lately (decaying count)
    cap_half_life_s: float = 120.0
    impact_onset_s: float = 60.0        # a power cap explains a slow rank only if they began
    #                                     within this of each other
    facility_cap_nodes: int = 3         # a SW cap as deep as cap_clock_drop beginning within
    #                                     impact_onset_s on this many nodes: facility power
    #                                     management (a site or rack limit), no GPU's fault
    site_cap_join_s: float = 30.0       # a node's cap wave with no other node's yet waits
    #                                     this (and a sample) for the site's cap to reach
    #                                     another node before it is its own (a demand-response
    #                                     cap reaches a row's BMCs within ~25 s)
    routine_cap_slot_s: float = 30.0    # SW power capping a GPU's rank ran through unslowed:
    routine_cap_slots: int = 120        # its largest clock loss per slot, this many slots kept
    throttle_clear_samples: int = 5
    brake_repeat_s: float = 300.0       # a HW power brake on every GPU of a node seen on two
    #                                     polls this close is sustained (dcgm-exporter counts
    #                                     clock events over 5 min): GpuThermal._brake_again
    clock_baseline_fading: float = 0.05
    hot_gpu_c: float = 85.0             # HW slowdown (0x8) above this counts as thermal
    hot_delta_c: float = 12.0           # a GPU this much hotter than its node's median ...
    hot_samples: int = 3                # ... for this many samples has a cooling problem:
    hot_limit_c: float = 87.0           # evidence below this (at its clock, its rank at its
    #                                     peers' pace); at it a recommendation on its own: an
    #                                     H100's maximum operating temperature (nvidia-smi's
    #                                     "GPU Max Operating Temp"; slowdown 89-90 C)
    thermal_tau_s: float = 60.0         # a GPU's temperature follows its power this late
    steady_history_s: float = 60.0      # a GPU's mates at their load this long (two polls at
    steady_rise_c: float = 3.0          # least) and this little warmer: shown steady, so a
    #                                     GPU throttling thermally beside them is its own
    #                                     fault, not its node's cooling (GpuThermal._mates_steady)

    # NIC ports.
    nic_errors: float = 50.0            # symbol + receive + sequence errors within ~a half-life
    nic_error_half_life_s: float = 60.0
    nic_flaps: float = 2.0              # link_downed increments within ~a half-life
    nic_flap_half_life_s: float = 300.0
    nic_throughput_ratio: float = 0.5   # below this share of the node's other ports
    nic_throughput_samples: int = 5
    nic_busy_gbps: float = 5.0          # the other ports must carry at least this much
    nic_quiet_s: float = 30.0           # errors/flaps clear after this long without new ones
    nic_peer_fading: float = 0.1        # a port's share of busy samples at its node's pace ...
    nic_peer_share: float = 0.5         # ... at least this: it carries the job's traffic, and
    #                                     only such a port is judged low (a frontend/storage
    #                                     port that has always been quiet did not go quiet)
    nic_errors_seen: float = 2.0        # errors within ~a half-life that count a port as
    nic_errors_seen_ratio: float = 4.0  # affected (switch evidence), and this many times the
    nic_error_base_half_life_s: float = 1800.0  # port's own rate (over this half-life)
    nic_gap_s: float = 60.0             # a port silent this long (and > 3 intervals) came
    #                                     back (a reboot): down on its first sample back is
    #                                     link training, down on the next is down
    nic_port_names: int = 64            # port names (cluster, NIC, port) whose standing
    #                                     across the nodes a worker keeps (network.PortNames):
    #                                     a few dozen real ones; junk names from untrusted
    #                                     telemetry displace each other, not these
    nic_rate_samples: int = 3           # a port up at a negotiated rate_gbps below its peers'
    nic_rate_hold_s: float = 60.0       # (its name on the other nodes, its node's ports of its
    #                                     family) on this many samples in a row spanning this
    #                                     long is a degraded link (trained at a lower width or
    #                                     speed): not a retraining's passing rate after a reboot

    # Congestion another workload makes on a leaf (net19, blind7 G2; screened offline by net18
    # over blind2-8: /work/helpers/old18/net18-report.md).  A port is congested while its
    # xmit_wait (time waiting for credit) per second is at least nic_congested_wait_per_s and
    # nic_congested_wait_ratio times its own running mean, with CNPs (np_cnp_sent +
    # rp_cnp_handled) per second at least nic_congested_cnps and nic_congested_cnp_ratio times
    # theirs (blind7's leaf2: x30-80 and 300-900/s; a weight pull inside a leaf, x20 with no
    # CNP storm, is routine), judged after nic_congested_learn samples learnt (a running mean
    # over the first nic_congested_span, an EWMA of that span after); it clears after
    # nic_congested_quiet_s without such a sample (two 10 s samples).
    nic_congested_wait_per_s: float = 1e6
    nic_congested_wait_ratio: float = 10.0
    nic_congested_cnps: float = 100.0
    nic_congested_cnp_ratio: float = 5.0
    nic_congested_learn: int = 6
    nic_congested_span: int = 30
    nic_congested_quiet_s: float = 20.0
    # A NIC whose congestion signal stands far above its peers' (x1nic, round 30; blind20 X1: a
    # NIC behind PCIe x8 under a job that starts on it -- never calm, so the running mean above
    # never tells it).  A port *sends* CNPs (np_cnp_sent: ECN-marked packets received -- the
    # queue towards it fills) or *handles* them (rp_cnp_handled: its sends are rate-limited)
    # at least nic_cnp_per_s and nic_cnp_ratio times the median of its node's other busy ports
    # of its family (at least nic_cnp_peer_floor_s taken as that median: DCQCN's everyday
    # 0-80/s), on nic_cnp_samples samples in a row; a sender's bytes at most nic_cnp_bytes_ratio
    # times its siblings' (more is an incast it receives, not a slow drain).  Evidence only:
    # detector.nic_cnp joins them (a sender with its job's ports on other nodes handling).
    nic_cnp_per_s: float = 100.0
    nic_cnp_ratio: float = 10.0
    nic_cnp_peer_floor_s: float = 10.0
    nic_cnp_samples: int = 3
    nic_cnp_bytes_ratio: float = 1.25
    # A job waiting in its collectives (detector.job_comm): the median comm_ms of its ranks'
    # steps in a comm_bin_s bin at least comm_wait_ratio times the median of its previous
    # comm_base_bins..comm_hist_bins calm bins (blind7 G2: x1.30-1.45 on every rank; net18's
    # screen: 1.2 fires in the label's first bin in all 8 logs, nowhere else with a leaf
    # congested but blind4's X-spine).
    comm_bin_s: float = 10.0
    comm_wait_ratio: float = 1.2
    comm_base_bins: int = 6
    comm_hist_bins: int = 30

    # Correlation and alert lifecycle.
    switch_window_s: float = 3.0        # NIC trouble on one switch within this is the switch's
    switch_min_fraction: float = 0.5    # of the nodes behind a switch (or in a domain)
    switch_min_nodes: int = 2
    domain_window_s: float = 6.0        # NVLink trouble across an NVL72 rack within this (one
    #                                     ECC sample period + margin) is the rack's NVSwitch
    escalate_after_s: float = 3.0       # wait for an explanation before paging a human
    unknown_cadence_s: float = 30.0     # a node's thermal cadence before it is known (told
    #                                     after two like gaps): dcgm-exporter's default
    why_wait_s: float = 3.0             # a recovery action says what to do, not why: wait this
    #                                     long (the allowed disorder) for the XID that says why
    benign_grace_s: float = 30.0        # power management this recent explains a small slowdown
    resolve_after_s: float = 30.0       # quiet time before a problem is resolved
    flap_window_s: float = 600.0        # ... except slow_node, network and sdc problems (soft,
    #                                     statistical signals that hover near their limits):
    #                                     coming back within this is the same incident, so
    #                                     they resolve only after this long quiet
    evidence_items: int = 8
    forget_after_s: float = 3600.0      # resolved problems are dropped from memory after this
    job_idle_s: float = 3600.0          # a job silent this long is forgotten
    unit_idle_s: float = 3600.0         # a GPU's / node's monitors silent this long are dropped
    unit_fault_idle_s: float = 86400.0  # ... or this long, when a fault was raised on them

    # Recovery estimates on alerts (the job's checkpoint settings; [recovery] in the settings).
    checkpoint_interval_s: float = 1800.0  # a restart redoes half of this on average
    restart_s: float = 300.0               # rescheduling, loading the checkpoint, warm-up

    def with_overrides(self, overrides: dict[str, Any]) -> Thresholds:
        """A copy with some values replaced; unknown names raise ValueError."""
        known = {f.name: f.type for f in fields(self)}
        bad = sorted(set(overrides) - set(known))
        if bad:
            raise ValueError(f"unknown threshold(s): {', '.join(bad)}")
        return replace(self, **overrides)
