"""`quarry serve`: the JSON API, Pi-Serini's search backend, the job pages and MCP over HTTP — one
ASGI app (quarry.http.app) over the application layer (quarry.app)."""
