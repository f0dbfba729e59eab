"""The HTTP and MCP boundary: error envelopes, principals from the authorizer, the MCP server."""
