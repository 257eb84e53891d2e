"""One round of one processor task: partition p of every source topic folded against the task's store.

A round reads the store and writes nothing: it yields the records to send in the task's transaction
(totals, dedupe memory, applied awards, reconciliation, one watermark per (region, partition) read)
and the batch to write to the store once that transaction committed.

``dispatch.Round`` hands each record to the handler of its kind, and every handler reads and writes
one ``state.RoundState``: ``awards``, ``markers`` (close cutoffs, expiry of ROLLING boards' days),
``corrections``, ``positions`` (heartbeats, replication gaps, watermarks) and ``forgetting`` (of the
dedupe memory's oldest copies, before any record).
"""

from regions.processor.round.dispatch import Round
from regions.processor.round.forgetting import FORGET_BATCH
from regions.processor.round.state import Output, RoundState, Source, Unprocessable

__all__ = ["FORGET_BATCH", "Output", "Round", "RoundState", "Source", "Unprocessable"]
