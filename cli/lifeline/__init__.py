"""lifeline's Python side: the CLI, the crash-report parser and the reproducer checker (stdlib only)."""
