"""Import every shipped component module so their ``@component`` decorators register them."""
import components.data  # noqa: F401
import components.models  # noqa: F401
import components.probes  # noqa: F401
import components.report  # noqa: F401
import components.train  # noqa: F401
