"""The API, declared once: every operation (`operations.py`: its route, request and MCP tool) and every request with
its options (`request.py`: types, bounds, help, command-line names). Standard library only: the launcher's warm
path imports it."""
