"""Components: report."""
