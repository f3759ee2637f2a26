"""The AWS side of the embedded local stack: a seeded, patched moto server."""
