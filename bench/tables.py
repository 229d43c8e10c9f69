"""The derived cells of the benchmark tables (ratios, slow-downs, shares): each computed from two cells printed in
the same row, as printed, so that a reader who divides the row's own figures gets the figure shown.

tests/cli/test_dashboard.py checks every table bench/ prints against this rule.
"""


def times(num, den) -> str:
    """num / den as "0.73x" (two decimals), or "n/a" where den is 0 or missing."""
    if num is None or not den:
        return "n/a"
    return f"{num / den:.2f}x"


def percent(num, den, digits: int = 1) -> str:
    """num / den as a percentage ("86.6%"), or "-" where den is 0 or missing."""
    if num is None or not den:
        return "-"
    return f"{100.0 * num / den:.{digits}f}%"
