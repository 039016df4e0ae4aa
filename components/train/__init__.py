"""Components: train."""
