"""Components: report (the scorecard of claims and the per-architecture B1-B4 matrix)."""

from components.report.scorecard import scorecard
from components.report.table import render_architectures, render_table
from components.report.vocabulary import ScorecardError, validate_expectations

__all__ = ["ScorecardError", "render_architectures", "render_table", "scorecard", "validate_expectations"]
