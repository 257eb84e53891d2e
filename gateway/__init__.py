"""The GraphQL gateway of one region (``python -m gateway``).

Layout: ``core/`` pure rules (limits, query cost, breaker, caches, hints, the feed state, update
derivation and coalescing); ``api/`` the strawberry schema, one module per domain (query,
leaderboard, mutation, subscription) plus ids, errors, cost and extensions; ``hub.py`` the hints
fan-out; ``projections.py`` read routing and the top-K micro-cache; ``boards.py`` cached board
definitions; ``profiles.py`` guarded profile lookups (on ``regions/stores/cassandra/profiles.py``);
``cassandra_stores.py`` the Cassandra stores opened in the background; ``body_limit.py`` the request
body cap; ``app.py`` the ASGI app; ``server.py`` uvicorn's settings; ``wiring.py`` opening Redis,
Cassandra and the hints feed; ``static/`` the live page.
"""
