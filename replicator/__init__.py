"""Cross-region replication: each region copies every other region's locally accepted awards into a
local topic per source region, exactly once, so its processor folds all of them (``python -m replicator``)."""
