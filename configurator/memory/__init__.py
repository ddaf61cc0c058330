"""Pure memory math: per-layer KV specs, grouping, blocks and capacity, weights, the budget.

No I/O, no logging, no globals; integer bytes throughout.
"""
