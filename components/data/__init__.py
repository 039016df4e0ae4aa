"""Components: data."""
