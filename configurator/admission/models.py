"""Model lookup for the webhook and `review`: moved to configurator.model.resolver (the one lookup that
`check`, `review`, the webhook and `audit` share); re-exported here for callers of the old place."""

from configurator.model.resolver import catalog_resolver

__all__ = ["catalog_resolver"]
