"""Frontends that serve a warm KnowledgeBase to agents: authenticated HTTP and MCP."""
