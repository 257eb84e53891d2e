"""The gateway's pure core: limits, caches, the circuit breaker, hints and update derivation.

Nothing here does I/O or reads the clock; time is always a parameter.
"""
