"""`quarry mcp`: Quarry as a Model Context Protocol server (quarry.mcp.server) over the application
layer (quarry.app)."""
