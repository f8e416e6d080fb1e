"""faultline's training-side step reporter: one ``telemetry.step`` message per rank per step.

Importable on its own; needs only confluent-kafka (numpy or torch only when you
checksum their arrays).  It never blocks and never raises into the training
loop: messages go to librdkafka's bounded queue, and what does not fit — or
cannot be delivered — is dropped and counted (``reporter.dropped``).

    from faultline_reporter import StepReporter, param_checksum

    reporter = StepReporter(job="llama-8b-run3", bootstrap="kafka-0:9092")
    for step, batch in enumerate(loader):
        with reporter.step(step) as s:
            with s.compute(cuda=True):        # CUDA events, read without waiting
                loss = model(batch).loss
                loss.backward()
            with s.comm(cuda=True):
                allreduce_gradients()          # or let DDP do it inside compute
            optimizer.step()
            s.loss, s.grad_norm = loss.item(), grad_norm
            if step % 100 == 0:
                s.param_checksum = param_checksum(model.parameters())
    reporter.close()

Rank, local GPU and node come from torchrun's environment (``RANK``,
``LOCAL_RANK``, the host name); tensor/pipeline/data-parallel ranks from
Megatron's ``parallel_state`` when it is initialised, or from the sizes in
``FAULTLINE_TP_SIZE``/``FAULTLINE_PP_SIZE`` with Megatron's default rank order.
"""

from faultline_reporter.checksum import param_checksum
from faultline_reporter.ranks import Placement, placement_from_env
from faultline_reporter.reporter import Step, StepReporter

__all__ = ["Placement", "Step", "StepReporter", "param_checksum", "placement_from_env"]
