"""Planning: a validated pipeline expanded into step runs, before anything runs.

``build()`` (``build.py``) is the face: it loads the file and runs the phases in order, each a
private module of its own:

    _profiles.py  profiles and ``--set`` overrides applied to the params and steps
    _expand.py    matrix axes checked, and every step expanded into its instances
    _refs.py      the step order from references and ``needs``, and each ``${...}`` resolved
    _params.py    each step's component, and an instance's parameters checked against it
    _summaries.py the summary keys each step declares, and the claims that read them resolved
    _place.py     how many GPUs each instance runs on (and re-placement at run start)
    _keys.py      every instance's cache key from its parts, why two keys' parts differ, the spec hash
    _libraries.py the libraries a component's results depend on and their installed versions
    _fingerprint.py  content fingerprints of the folders a step reads from outside the store
    _fresh.py     the steps ``--fresh`` or ``settings.fresh`` has computed again
    _model.py     ``Plan``, ``Instance`` and the names every phase shares, alone so phases import it
    facts.py      the facts a user groups step runs by (architecture, task, bottleneck, seed, profile)
    size.py       the bound on step runs and links, counted before anything is expanded
    resources.py  devices as resources: the GPUs a run gets and what each step asks for

Planning imports component declarations, never their code, Prefect or MLflow.
"""

from flows.plan.build import Instance, Plan, build

__all__ = ["Instance", "Plan", "build"]
