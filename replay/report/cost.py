"""What an incident cost, in the units training is judged by.

- **Training time lost**: each step's excess over the job's typical step time (the median
  over the log), times the ranks that waited for it, summed: GPU-hours.  In synchronous
  training every rank waits for the slowest, so one slow rank costs all of them.
- **ETTR** of the window: productive time / wall time = steps x typical step time over
  the time from the first step's end to the last's (stalls and slow steps both count).
- **MFU**, when the job's FLOPs per step are given: achieved FLOP/s over the peak of
  its GPUs (``peak_tflops`` per GPU; 989 dense BF16 for an H100 SXM).

>>> from replay.report.series import StepTotals
>>> t = StepTotals({s: 100.0 + s + 2 * (s >= 5) for s in range(10)}, {s: 8 for s in range(10)},
...                {s: 1000.0 if s != 5 else 3000.0 for s in range(10)})
>>> c = job_cost("job-1", t)          # step 5 took 3 s instead of 1 s: 8 ranks waited 2 s
>>> round(c.lost_gpu_s, 1), round(c.ettr, 3)
(16.0, 0.833)
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from replay.report.series import StepTotals

H100_PEAK_TFLOPS = 989.0


@dataclass(frozen=True)
class JobCost:
    job: str
    steps: int
    ranks: int
    gpus: int
    typical_step_s: float
    wall_s: float
    lost_gpu_s: float           # excess step time x ranks, summed over steps
    lost_wall_s: float          # excess step time, summed: how much later the job got there
    ettr: float | None
    mfu: float | None = None

    def line(self) -> str:
        mfu = f", MFU {100 * self.mfu:.1f} %" if self.mfu is not None else ""
        ettr = f"{100 * self.ettr:.1f} %" if self.ettr is not None else "n/a"
        return (f"{self.job}: {self.lost_gpu_s / 3600:.2f} GPU-hours lost "
                f"({self.lost_wall_s:.0f} s of wall time x {self.ranks} ranks); ETTR {ettr} "
                f"over {self.steps:,} steps{mfu}")


def job_cost(job: str, t: StepTotals, *, flops_per_step: float | None = None,
             peak_tflops: float = H100_PEAK_TFLOPS, since: float = -math.inf,
             until: float = math.inf) -> JobCost:
    """The cost of the steps of ``job`` that ended in ``[since, until]``."""
    steps = sorted(s for s, ts in t.end_ts.items() if since <= ts <= until)
    times = [t.step_ms[s] / 1e3 for s in steps if math.isfinite(t.step_ms.get(s, math.nan))]
    all_times = [x / 1e3 for x in t.step_ms.values() if math.isfinite(x)]
    typical = statistics.median(all_times) if all_times else math.nan
    ranks = max(t.ranks.values(), default=0)
    lost_wall = sum(max(0.0, x - typical) for x in times)
    lost_gpu = sum(max(0.0, t.step_ms[s] / 1e3 - typical) * t.ranks[s] for s in steps
                   if math.isfinite(t.step_ms.get(s, math.nan)))
    ettr = mfu = None
    wall = 0.0
    if len(steps) >= 2 and math.isfinite(typical):
        wall = t.end_ts[steps[-1]] - t.end_ts[steps[0]] + typical
        ettr = min(1.0, len(steps) * typical / wall) if wall > 0 else None
        gpus = len(t.gpus) or ranks
        if flops_per_step and gpus and wall > 0:
            mfu = flops_per_step * len(steps) / (wall * gpus * peak_tflops * 1e12)
    return JobCost(job, len(steps), ranks, len(t.gpus), typical, wall, lost_gpu, lost_wall,
                   ettr, mfu)
