"""Components: probes (measure the four bottlenecks) and evaluation.

Modules are imported one by one as steps need them (``components/library.py`` lists them).
"""
