"""Components: probes."""
