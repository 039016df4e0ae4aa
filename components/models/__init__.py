"""Components: models."""
