"""The switches for tests only, which production mode refuses."""

from __future__ import annotations

#: Switches for tests only, by (section, field), with what they would break: production mode refuses
#: any value but the default, and the chart offers none of them.
TEST_ONLY: dict[tuple[str, str], str] = {
    ("processor", "fault_forget_event_ids"): "repeats would be counted again",
    ("processor", "honour_cutoffs"): "awards after a closing board's cutoff would be applied",
    ("lifecycle", "fault_chunk_pause_ms"): "every archive would pause after each round of chunk writes",
    ("windows", "clock_offset_s"): "periods would roll over at the wrong time",
}
