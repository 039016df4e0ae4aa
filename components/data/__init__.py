"""Components: data prep (translation corpora, images, synthetic probe tasks) and their loaders.

Modules are imported one by one as steps need them (``components/library.py`` lists them).
"""
