"""Component registry: plain typed functions registered under stable names.

A component is ``fn(ctx, *, param: T = default, ...) -> dict``. Its parameters are validated by a
pydantic model built from the signature, or, for one declared with ``config=SomeConfig``, by that
pydantic class, whose validated instance is its one argument: ``fn(ctx, cfg: SomeConfig)``. Its
declared ``outputs`` are the keys of the returned dict (JSON-serialisable values; big things are
files in ``ctx.work_dir``).

Looking up a shipped component reads its declaration from source (``components/library.py`` says
which module); its module is imported only when the function is first needed.
"""

from __future__ import annotations

import inspect
import threading
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any, Callable

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from components import code_version
from components.bounds import refusal
from components.code_version import module_file as _module_file
from components.imports import ModuleImportFailed, import_function, import_module, suggest
from components.summary_keys import Placeholder, parse

ENTRY_POINT_GROUP = "bottlenecks.components"


class ComponentError(Exception):
    """A component could not be found, loaded or called with these parameters."""


# what a component can show, and what the engine does with the output each role names
SHOW_ROLES = {
    "headline": "one line of text: printed after the run, and the description of the Prefect artifact",
    "description": "Markdown (a .md file or the text): the MLflow parent run's description",
    "artifact": "Markdown (a .md file or the text): a Markdown artifact on the Prefect flow run",
    "console": "printed after the run: a .md file or text, or [output, 'module:function'] to render it",
    "figures": "image files (a list, or name -> path): logged on the parent run under figures/ (promote=True)",
    "verdicts": "a JSON file of the run's verdicts: named on the parent run for `bottlenecks history`",
}


class ParameterValueError(ValueError):
    """Raised by a parameter type's own validator (a model name) with a message that says what is
    wrong and how to fix it; the pipeline's error shows that message as it is."""


@dataclass
class Component:
    """A registered step: the function, its parameter model and what it returns.

    ``fn`` is imported from ``module`` on first use when the component was read from source.
    """

    name: str
    _fn: Callable[..., dict] | None
    outputs: tuple[str, ...]
    version: str
    params_model: type[BaseModel]
    bottleneck: str | None = None
    promote: bool = False
    tags: dict[str, str] = field(default_factory=dict)
    shows: dict[str, Any] = field(default_factory=dict)  # display role -> output (see SHOW_ROLES)
    module: str = ""
    _doc: str | None = field(default=None, repr=False)
    config: type[BaseModel] | None = None  # the parameters' class, passed as one validated instance
    depends_on: tuple[str, ...] = ()  # distributions whose versions its results depend on (cache keys)
    resources: dict[str, Any] = field(default_factory=dict)  # what a step of it holds by default: {"gpu": 1}
    # metric names it logged before the namespaces (docs/metrics.md), so history reads old nights: a
    # first segment ("rho": "rho" and "rho/..."; "params/": only "params/...") placed under its
    # namespace today, or an old prefix -> its new one ("valid_": "valid/")
    logged_before: tuple[str, ...] = ()
    renamed_before: dict[str, str] = field(default_factory=dict)
    # what a user groups its runs by -> the parameter that says it ({"architecture": "model"}): tags on
    # each step run, so MLflow's "Group by" gives one line per architecture (docs/metrics.md)
    group_by: dict[str, str] = field(default_factory=dict)
    # the keys of its ``summary`` output, as patterns (components/summary_keys.py), so `check` resolves
    # the claims that read it; None where it declares none
    summary_keys: tuple[str, ...] | None = None
    # for a component whose parameters name other steps' summaries by reference (a report's claims):
    # {"sources": the parameter mapping a name to ${step.summary}, "in": the parameters holding the
    # references, "check": "module:function" resolving them}; empty for any other
    references: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if self._fn is not None:
            self.module = self._fn.__module__

    @property
    def fn(self) -> Callable[..., dict]:
        if self._fn is None:
            self._fn = _imported_component(self.name, self.module).fn
        return self._fn

    @property
    def loaded(self) -> bool:
        """Whether the function has been imported (False for a declaration read from source)."""
        return self._fn is not None

    @property
    def doc(self) -> str:
        doc = self._doc if self._doc is not None else inspect.getdoc(self.fn) or ""
        if self.config is not None and self.config.__doc__:  # where a config component documents its parameters
            doc += "\n\n" + inspect.cleandoc(self.config.__doc__)
        return doc

    @property
    def summary(self) -> str:
        return self.doc.splitlines()[0] if self.doc else ""

    @property
    def code_version(self) -> str:
        """Declared version plus a hash of the source the component's module runs.

        That is its module and every module of the same top-level package it imports, directly
        or through others (imports inside functions included), with their packages'
        ``__init__`` files: an edit to a model or loader a trainer uses invalidates the training
        steps, while an edit to the report code leaves them cached.
        """
        return f"{self.version}+{code_version.digest(self.module)}"

    def shown(self, role: str, outputs: dict[str, Any]) -> Any:
        """The value of the output this component shows as ``role``, or None when it shows none."""
        declared = self.shows.get(role)
        name = declared[0] if isinstance(declared, (list, tuple)) else declared
        return outputs.get(name) if name is not None and isinstance(outputs, dict) else None

    def parameters(self) -> dict[str, tuple[Any, Any, bool]]:
        """Map parameter name to (annotation with its declared bounds, default, required)."""
        out = {}
        for name, f in self.params_model.model_fields.items():
            ann = Annotated[(f.annotation, *f.metadata)] if f.metadata else f.annotation  # pydantic keeps them apart
            out[name] = (ann, f.default, f.is_required())
        return out

    def validate(self, params: dict[str, Any]) -> BaseModel:
        """Validate parameters; raises pydantic.ValidationError."""
        return self.params_model.model_validate(params)

    def _refused(self, params: dict[str, Any], e: ValidationError) -> Exception:
        """The error for parameters the model refused: a value out of its declared bounds in words
        ("steps must be at least 0; got -1"); a config's own ``check()`` says it first, in its own
        error type, when types are right and only bounds are broken."""
        bounds = [refusal(err) for err in e.errors()]
        if all(bounds) and callable(getattr(self.config, "check", None)):
            self.config.model_construct(**params).check()
        if all(bounds):
            return ComponentError(f"{self.name}: " + "; ".join(bounds))
        return ComponentError(f"{self.name}: invalid parameters:\n{e}")

    def __call__(self, ctx, **params) -> dict:
        """Validate ``params`` and call the function; check the declared outputs came back."""
        try:
            model = self.validate(params)
        except ValidationError as e:
            raise self._refused(params, e) from None
        if hasattr(ctx, "component"):  # the context places this call's metric names by it (docs/metrics.md)
            ctx.component = self.name
        result = self.fn(ctx, model) if self.config is not None else self.fn(ctx, **model.model_dump())
        if not isinstance(result, dict):
            raise ComponentError(f"{self.name} returned {type(result).__name__}, expected a dict of outputs")
        missing = [o for o in self.outputs if o not in result]
        if missing:
            raise ComponentError(
                f"{self.name} did not return declared outputs {missing} (it returned {sorted(map(str, result))}); "
                "return every name in outputs=[...] or declare fewer"
            )
        bad = _not_json(result)
        if bad is not None:
            where, value = bad
            raise ComponentError(
                f"{self.name} returned output {where} as a {type(value).__module__}.{type(value).__qualname__}, "
                "which is not JSON: outputs are JSON values (numbers, strings, lists, dicts); " + _json_hint(value)
            )
        return result


def _not_json(value: Any, where: str = "") -> tuple[str, Any] | None:
    """The first place in ``value`` (``'arr'``, ``'table'['x'][2]``) holding something JSON cannot
    carry, with that thing; None when all of it can."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            here = f"{where}[{k!r}]" if where else repr(k)
            if not isinstance(k, (str, int, float, bool)) and k is not None:
                return here, k
            if (found := _not_json(v, here)) is not None:
                return found
        return None
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            if (found := _not_json(v, f"{where}[{i}]")) is not None:
                return found
        return None
    return where or "(the dict)", value


def _json_hint(value: Any) -> str:
    kind = type(value).__module__.partition(".")[0]
    if hasattr(value, "tolist") and kind in ("numpy", "torch"):
        return "return value.tolist() (or .item() for one number), or save it in ctx.work_dir and return the path"
    if isinstance(value, Path):
        return "return str(path)"
    if isinstance(value, (set, frozenset)):
        return "return sorted(values)"
    return "save it in ctx.work_dir and return the file's path"


_REGISTRY: dict[str, Component] = {}


def _params_model(name: str, fn: Callable, config: Any = None) -> type[BaseModel]:
    """Build a strict pydantic model from the keyword parameters after ``ctx`` (or from ``config``)."""
    sig = inspect.signature(fn)
    fields: dict[str, Any] = {}
    params = list(sig.parameters.values())
    if not params or params[0].name != "ctx":
        raise ComponentError(f"component {name!r}: first parameter must be 'ctx'")
    if config is not None:
        if len(params) != 2 or params[1].kind not in (params[1].POSITIONAL_ONLY, params[1].POSITIONAL_OR_KEYWORD):
            what = getattr(config, "__name__", repr(config))
            raise ComponentError(f"component {name!r}: with config={what}, the function takes (ctx, cfg: {what})")
        return _config_model(name, config)
    hints = inspect.get_annotations(fn, eval_str=True)
    for p in params[1:]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ComponentError(f"component {name!r}: *args/**kwargs are not allowed ({p.name})")
        if p.name not in hints:
            raise ComponentError(f"component {name!r}: parameter {p.name!r} needs a type annotation")
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (hints[p.name], default)
    return _model(name, fields)


def _model(name: str, fields: dict[str, tuple[Any, Any]]) -> type[BaseModel]:
    """A strict pydantic model of ``fields`` (name -> (annotation, default or ...))."""
    return create_model(_model_name(name), __config__=ConfigDict(extra="forbid"), **fields)


def _config_model(name: str, config: Any) -> type[BaseModel]:
    """The params model of a ``config=`` component: that class, named as any, unknown keys forbidden."""
    if not (isinstance(config, type) and issubclass(config, BaseModel)):
        raise ComponentError(f"component {name!r}: config= takes a pydantic BaseModel class, got {config!r}")
    own = {"__module__": config.__module__, "model_config": ConfigDict(extra="forbid")}
    return type(_model_name(name), (config,), own)


def _declared_params(name: str, found: Any) -> type[BaseModel]:
    """The params model of a declaration read from source: its config class, or its signature's fields."""
    config = found.keywords.get("config")
    return _config_model(name, config) if config is not None else _model(name, found.fields)


def _model_name(name: str) -> str:
    return "Params_" + "".join(c if c.isalnum() else "_" for c in name)


def _checked_shows(name: str, shows: dict[str, Any] | None, outputs: tuple[str, ...]) -> dict[str, Any]:
    """``shows`` as declared, after checking each role is known and names a declared output."""
    shows = dict(shows or {})
    for role, value in shows.items():
        if role not in SHOW_ROLES:
            raise ComponentError(
                f"component {name!r}: shows= has an unknown role {role!r}{suggest(role, set(SHOW_ROLES))}; "
                f"roles: {', '.join(SHOW_ROLES)}"
            )
        renderer = role == "console" and isinstance(value, (list, tuple))
        if renderer and not (len(value) == 2 and all(isinstance(v, str) for v in value) and ":" in value[1]):
            raise ComponentError(
                f"component {name!r}: shows console as {value!r}; give an output name or [output, 'module:function']"
            )
        output = value[0] if renderer else value
        if output not in outputs:
            raise ComponentError(
                f"component {name!r}: shows {role} as {output!r}, which is not among its outputs "
                f"{list(outputs)}{suggest(str(output), set(outputs))}"
            )
    return shows


def _checked_resources(name: str, resources: Any) -> dict[str, Any]:
    """``resources`` as ``{"gpu": N}`` (N a count of GPUs or ``"all"``), after checking it."""
    resources = resources or {}
    gpu = resources.get("gpu", 0) if isinstance(resources, dict) else None
    ok = isinstance(resources, dict) and set(resources) <= {"gpu"}
    ok = ok and (gpu == "all" or (isinstance(gpu, int) and not isinstance(gpu, bool) and gpu >= 0))
    if not ok:
        raise ComponentError(
            f"component {name!r}: resources= takes {{'gpu': N}} (N GPUs a step holds where the run is offered "
            f"GPUs, or 'all'), got {resources!r}"
        )
    return dict(resources)


def _checked_logged_before(name: str, logged: Any, renamed: Any) -> tuple[tuple[str, ...], dict[str, str]]:
    """``logged_before`` as a tuple of names and ``renamed_before`` as old prefix -> new, after checking them."""
    logged = tuple(logged or ())
    renamed = dict(renamed or {})
    if not all(isinstance(k, str) and k for k in logged) or not all(
        isinstance(k, str) and k and isinstance(v, str) and v for k, v in renamed.items()
    ):
        raise ComponentError(
            f"component {name!r}: logged_before= takes metric names or first segments (['rho', 'params/']) and "
            f"renamed_before= old prefixes to new ones ({{'valid_': 'valid/'}}), got {logged!r}, {renamed!r}"
        )
    return logged, renamed


def _checked_group_by(name: str, group_by: Any, params_model: type[BaseModel]) -> dict[str, str]:
    """``group_by`` as fact -> parameter, after checking each names one of the component's parameters."""
    group_by = {} if group_by is None else group_by
    ok = isinstance(group_by, dict)
    ok = ok and all(isinstance(k, str) and k and isinstance(v, str) for k, v in group_by.items())
    if not ok:
        raise ComponentError(
            f"component {name!r}: group_by= takes fact names and the parameters that give them "
            f"({{'architecture': 'model'}}), got {group_by!r}"
        )
    fields = params_model.model_fields
    unknown = [v for v in group_by.values() if v not in fields]
    if unknown:
        raise ComponentError(
            f"component {name!r}: group_by= names {unknown[0]!r}, which is none of its parameters "
            f"({', '.join(sorted(fields))}){suggest(unknown[0], list(fields))}"
        )
    return dict(group_by)


def _checked_summary(name: str, summary: Any, params_model: type[BaseModel]) -> tuple[str, ...] | None:
    """``summary`` as a tuple of key patterns, after checking each parses and its placeholders start at
    one of the component's parameters; None where the component declares none."""
    if summary is None:
        return None
    if isinstance(summary, str) or not isinstance(summary, (list, tuple)):
        raise ComponentError(
            f"component {name!r}: summary= takes a list of key patterns such as "
            f"['rho', 'acc/{{models}}', 'count/len_{{buckets|bucket_names}}'], got {summary!r}"
        )
    fields = params_model.model_fields
    for pattern in summary:
        try:
            parts = parse(pattern)
        except ValueError as e:
            raise ComponentError(f"component {name!r}: summary= {e}") from None
        for part in parts:
            if isinstance(part, Placeholder) and not any(n in fields for n in part.path[0]):
                raise ComponentError(
                    f"component {name!r}: summary= {pattern!r}: {part.text} names no parameter of it "
                    f"({', '.join(sorted(fields))}){suggest(part.parameter, list(fields))}"
                )
    return tuple(summary)


def _checked_references(name: str, references: Any, params_model: type[BaseModel]) -> dict[str, Any]:
    """``references`` as ``{"sources", "in", "check"}``, after checking it names the component's
    parameters and a ``module:function``."""
    if not references:
        return {}
    ok = isinstance(references, dict) and set(references) == {"sources", "in", "check"}
    ok = ok and isinstance(references["sources"], str) and isinstance(references["check"], str)
    ok = ok and ":" in references["check"] and isinstance(references["in"], (list, tuple))
    ok = ok and all(isinstance(p, str) for p in references["in"])
    if not ok:
        raise ComponentError(
            f"component {name!r}: references= takes {{'sources': PARAM, 'in': [PARAM, ...], 'check': "
            f"'module:function'}} (the parameter mapping names to ${{step.summary}}, those holding the "
            f"references, and the function resolving them), got {references!r}"
        )
    fields = params_model.model_fields
    for param in (references["sources"], *references["in"]):
        if param not in fields:
            raise ComponentError(
                f"component {name!r}: references= names {param!r}, which is none of its parameters "
                f"({', '.join(sorted(fields))}){suggest(param, list(fields))}"
            )
    return {"sources": references["sources"], "in": list(references["in"]), "check": references["check"]}


def _checked_depends_on(name: str, depends_on: Any) -> tuple[str, ...]:
    """``depends_on`` as a tuple of distribution names, after checking it is a list of names."""
    if isinstance(depends_on, str) or not all(isinstance(d, str) and d for d in depends_on):
        raise ComponentError(
            f"component {name!r}: depends_on= takes a list of distribution names such as "
            f"['sentencepiece'], got {depends_on!r}"
        )
    return tuple(depends_on)


def component(
    name: str,
    *,
    outputs: tuple[str, ...] | list[str] = (),
    version: str = "1",
    bottleneck: str | None = None,
    promote: bool = False,
    shows: dict[str, Any] | None = None,
    config: type[BaseModel] | None = None,
    depends_on: tuple[str, ...] | list[str] = (),
    resources: dict[str, Any] | None = None,
    logged_before: tuple[str, ...] | list[str] = (),
    renamed_before: dict[str, str] | None = None,
    group_by: dict[str, str] | None = None,
    summary: tuple[str, ...] | list[str] | None = None,
    references: dict[str, Any] | None = None,
) -> Callable[[Callable], Callable]:
    """Register ``fn`` as the component ``name``.

    Args:
        name: stable registry name (``area.name``), used as ``uses:`` in pipelines.
        outputs: names of the keys the function returns; pipelines reference them as
            ``${step.output}``.
        version: bump to invalidate caches when behaviour changes without a source change.
        bottleneck: which bottleneck (B1-B4) the component measures, recorded as a tag.
        promote: a report: the engine also puts its output files and metrics on the pipeline's
            parent run, where users look first.
        config: for a component with many parameters, a pydantic model class that defines them
            once (type, default, doc); the function is ``fn(ctx, cfg: ThatClass)`` and receives the
            validated instance. Unknown keys are errors as for keyword parameters, and the class's
            docstring is shown with the component's.
        shows: what the engine displays for this component, as display role -> one of its
            ``outputs`` (a literal dict, read from source like the rest): ``headline`` (a line
            printed after the run), ``description`` (Markdown for the MLflow parent run),
            ``artifact`` (Markdown for the Prefect flow run), ``console`` (printed after the run;
            ``[output, "module:function"]`` renders it with ``fn(value, terminal) -> [str | Rich
            renderable]``), ``figures`` (images logged on the parent run under ``figures/``) and
            ``verdicts`` (the JSON file ``bottlenecks history`` reads reasons from). See SHOW_ROLES.
        depends_on: installed distributions (``["sentencepiece"]``) whose versions its results
            depend on beyond torch, numpy and the known libraries its code imports; their versions
            are part of its cache key (docs/contracts.md, "Cache keys").
        resources: what each step of it holds by default, ``{"gpu": 1}`` (one GPU where the run is
            offered GPUs; none otherwise) or ``{"gpu": "all"}``; a step's ``resources:`` overrides it.
            Without it a step holds no GPU unless it asks.
        logged_before: the metric names it logged before the namespaces of docs/metrics.md, so that
            ``bottlenecks history`` reads older nights under today's names: a first segment (``"rho"``
            covers ``rho`` and ``rho/...``; ``"params/"`` only ``params/...``), placed under the
            component's namespace.
        renamed_before: older prefixes renamed otherwise (``{"valid_": "valid/"}``).
        group_by: the facts a user groups its runs by, each with the parameter that gives it
            (``{"architecture": "model", "task": "data"}``): each step run is tagged with the fact and
            the parameter's value (a reference: the step instances it reads), beside ``bottleneck``,
            ``seed`` and ``profile``, which the engine knows.
        summary: the keys of its ``summary`` output, as patterns read from source
            (``components/summary_keys.py``): ``"rho"``, ``"acc/{checkpoints}"`` (one key per label of
            the parameter's value), ``"acc/lag_{checkpoints.data.lag}"`` (a parameter of the steps it
            reads), ``"count/len_{buckets|bucket_names}"`` (a named transform), ``"grad/d_*"`` (any
            text). `bottlenecks check` resolves every claim that reads the summary against them; a
            component that declares none gets its claims checked for their step and label only.
        references: for a component whose parameters name other steps' summaries (a report's claims):
            ``{"sources": "measurements", "in": ["expect", "architectures"], "check":
            "module:function"}``. `check` calls the function with the ``in`` parameters and, per
            source, the keys its step will report (``Keys``, or label -> ``Keys``; None where unknown),
            and reports each ``(path in the parameters, message)`` it returns where the file writes it.
    """
    declared_shows = _checked_shows(name, shows, tuple(outputs))
    libraries = _checked_depends_on(name, depends_on)
    held = _checked_resources(name, resources)
    before, renamed = _checked_logged_before(name, logged_before, renamed_before)

    def register(fn: Callable) -> Callable:
        params_model = _params_model(name, fn, config)
        if name in _REGISTRY and _REGISTRY[name]._fn is not fn:
            prev = _REGISTRY[name].fn
            if (prev.__module__, prev.__qualname__) != (fn.__module__, fn.__qualname__):
                raise ComponentError(
                    f"component {name!r} registered twice: {prev.__module__}.{prev.__qualname__} "
                    f"and {fn.__module__}.{fn.__qualname__}"
                )
        _REGISTRY[name] = Component(
            name=name,
            _fn=fn,
            outputs=tuple(outputs),
            version=version,
            params_model=params_model,
            bottleneck=bottleneck,
            promote=promote,
            shows=declared_shows,
            config=config,
            depends_on=libraries,
            resources=held,
            logged_before=before,
            renamed_before=renamed,
            group_by=_checked_group_by(name, group_by, params_model),
            summary_keys=_checked_summary(name, summary, params_model),
            references=_checked_references(name, references, params_model),
        )
        fn.component = _REGISTRY[name]  # type: ignore[attr-defined]
        return fn

    return register


_plugins_loaded = False
_DECLARED: dict[str, Component] = {}
_lock = threading.RLock()  # steps run in threads; one import of a module at a time


def load_builtin() -> None:
    """Import every shipped component module and users' entry-point plugins."""
    from components import library

    library.import_all()
    _load_plugins_once()


def _load_plugins_once() -> None:
    global _plugins_loaded
    if not _plugins_loaded:
        _plugins_loaded = True
        load_plugins()


def load_plugins() -> None:
    """Import the modules that users' packages declare in the ``bottlenecks.components`` group."""
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            import_module(ep.module)
            ep.load()
        except ModuleImportFailed as e:
            raise ComponentError(f"plugin entry point {ep.name!r} ({ep.value}) failed to load: {e}") from None
        except Exception as e:  # the entry point names something the module does not have
            raise ComponentError(
                f"plugin entry point {ep.name!r} ({ep.value}) failed to load: {type(e).__name__}: {e}"
            ) from None


def registry() -> dict[str, Component]:
    """All registered components by name (imports every component module)."""
    load_builtin()
    return dict(_REGISTRY)


def declared() -> dict[str, Component]:
    """Every component by name, the shipped ones read from their declarations (no module imported)
    with users' entry-point plugins and any other component already registered."""
    from components import library

    _load_plugins_once()
    found = {name: get(name) for name in library.MODULES}
    return {**found, **_REGISTRY}


def get(name: str) -> Component:
    """Look up a component by registry name or ``package.module:function``.

    A shipped component comes from its declaration in source, without importing its module;
    a name that is not shipped loads the entry-point plugins.
    """
    from components import library

    if name in _REGISTRY:
        return _REGISTRY[name]
    if ":" in name:
        return _from_import_path(name)
    if name in library.MODULES:
        return _declared(name, library.MODULES[name])
    _load_plugins_once()
    if name in _REGISTRY:
        return _REGISTRY[name]
    raise ComponentError(f"unknown component {name!r}{suggest(name, set(library.MODULES) | set(_REGISTRY))}")


def _declared(name: str, module: str) -> Component:
    """The component ``name`` read from the source of ``module``; imported when that cannot tell."""
    from components import declared

    with _lock:
        if name in _DECLARED:
            return _DECLARED[name]
        path = _module_file(module)
        try:
            found = declared.read(module, path, name) if path else None
        except declared.Unreadable:
            found = None
        if found is None:
            return _imported_component(name, module)
        kw = found.keywords
        comp = Component(
            name=name,
            _fn=None,
            outputs=tuple(kw.get("outputs", ())),
            version=kw.get("version", "1"),
            params_model=_declared_params(name, found),
            bottleneck=kw.get("bottleneck"),
            promote=kw.get("promote", False),
            shows=_checked_shows(name, kw.get("shows"), tuple(kw.get("outputs", ()))),
            module=module,
            _doc=found.doc,
            config=kw.get("config"),
            depends_on=_checked_depends_on(name, kw.get("depends_on", ())),
            resources=_checked_resources(name, kw.get("resources")),
        )
        comp.logged_before, comp.renamed_before = _checked_logged_before(
            name, kw.get("logged_before"), kw.get("renamed_before")
        )
        comp.group_by = _checked_group_by(name, kw.get("group_by"), comp.params_model)
        comp.summary_keys = _checked_summary(name, kw.get("summary"), comp.params_model)
        comp.references = _checked_references(name, kw.get("references"), comp.params_model)
        _DECLARED[name] = comp
        return comp


def _imported_component(name: str, module: str) -> Component:
    """Import ``module`` and return the component it registers as ``name``."""
    with _lock:
        try:
            import_module(module)
        except ModuleImportFailed as e:
            raise ComponentError(f"component {name!r}: {e}") from None
        if name not in _REGISTRY:
            raise ComponentError(
                f"module {module!r} does not register component {name!r} (components/library.py names it)"
            )
        return _REGISTRY[name]


def _from_import_path(spec: str) -> Component:
    try:
        fn = import_function(spec)
    except ModuleImportFailed as e:
        raise ComponentError(f"cannot load {spec!r}: {e}") from None
    comp = getattr(fn, "component", None)
    if comp is None:
        comp = Component(name=spec, _fn=fn, outputs=(), version="1", params_model=_params_model(spec, fn))
        fn.component = comp
    _REGISTRY.setdefault(spec, comp)
    return comp
