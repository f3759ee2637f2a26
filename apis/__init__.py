"""apis package."""
