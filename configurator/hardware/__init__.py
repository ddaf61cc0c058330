"""GPU catalog lookups (names, aliases, node-label values, MIG slices)."""
