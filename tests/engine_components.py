"""Small components for the engine's tests, used through the `module:function` form."""
from pathlib import Path

from components import Context, component


@component("enginetest.numbers", outputs=["values", "file"])
def numbers(ctx: Context, *, n: int = 3, offset: int = 0) -> dict:
    """Write n numbers to a file and return them."""
    values = [offset + i for i in range(n)]
    path = ctx.path("numbers.txt")
    path.write_text("\n".join(map(str, values)))
    ctx.log_params({"n": n})
    for i, v in enumerate(values):
        ctx.log_metric("value", v, step=i)
    ctx.log_artifact(path)
    return {"values": values, "file": str(path)}


@component("enginetest.total", outputs=["total"])
def total(ctx: Context, *, values: list[int], scale: float = 1.0) -> dict:
    """Sum the values."""
    result = sum(values) * scale
    ctx.log_metric("total", result)
    return {"total": result}


@component("enginetest.collect", outputs=["table"])
def collect(ctx: Context, *, totals: dict[str, float]) -> dict:
    """Gather totals keyed by matrix value."""
    return {"table": dict(sorted(totals.items()))}


@component("enginetest.fail", outputs=["never"])
def fail(ctx: Context, *, message: str = "boom", marker: str = "") -> dict:
    """Fail unless the marker file exists."""
    if marker and Path(marker).exists():
        return {"never": "recovered"}
    raise RuntimeError(message)


@component("enginetest.flaky", outputs=["attempts"])
def flaky(ctx: Context, *, counter: str, succeed_on: int = 2) -> dict:
    """Fail until called `succeed_on` times (counts in a file)."""
    path = Path(counter)
    count = int(path.read_text()) + 1 if path.exists() else 1
    path.write_text(str(count))
    if count < succeed_on:
        raise RuntimeError(f"attempt {count} fails")
    return {"attempts": count}
