"""The gateway's pure core: limits, query cost, caches, the circuit breaker, hints, the feed state,
update derivation and rate-limited logging decisions.

Nothing here does I/O or reads the clock; time is always a parameter.
"""
