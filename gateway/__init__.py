"""The GraphQL gateway of one region (``python -m gateway``).

Layout: ``core/`` pure rules (limits, breaker, caches, hints, update derivation and coalescing);
``api/`` the strawberry schema, one module per domain (query, leaderboard, mutation,
subscription); ``hub.py`` the hints fan-out; ``projections.py`` read routing and the top-K
micro-cache; ``profiles.py`` and ``cassandra_profiles.py`` guarded profile lookups; ``app.py`` the
ASGI app; ``wiring.py`` opening Redis, Cassandra and the hints feed; ``static/`` the live page.
"""
